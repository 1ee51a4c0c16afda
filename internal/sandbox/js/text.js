// text.js: TextEncoder and TextDecoder (UTF-8 only, as in WinterCG runtimes).
//
// A chunk of the sandbox's globals, compiled on its own and read into a VM
// only when a script first uses one of them (chunks.go): most runs use none,
// and every VM would pay for reading and running them. P is what
// bootstrap.js hands over: the primordials as they were before any agent
// code ran, and a few helpers.
(function text(P) {
  "use strict";
  const { ArrayBufferC, RangeErrorC, StringC, TypeErrorC, Uint8ArrayC, apply, charCodeAt, create, defineProperty, fromCharCode, isView, stringSlice } = P;

  function toBytes(input) {
    if (input === undefined) return new Uint8ArrayC(0);
    if (input instanceof ArrayBufferC) return new Uint8ArrayC(input);
    if (isView(input)) return new Uint8ArrayC(input.buffer, input.byteOffset, input.byteLength);
    throw new TypeErrorC("TextDecoder.decode: the input must be an ArrayBuffer or a view on one");
  }
  function utf8Encode(s) {
    s = StringC(s);
    const n = s.length;
    const out = new Uint8ArrayC(n * 3);
    let j = 0;
    for (let i = 0; i < n; i++) {
      let c = apply(charCodeAt, s, [i]);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
        const d = apply(charCodeAt, s, [i + 1]);
        if (d >= 0xdc00 && d <= 0xdfff) {
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          i++;
        } else c = 0xfffd;
      } else if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
      if (c < 0x80) out[j++] = c;
      else if (c < 0x800) {
        out[j++] = 0xc0 | (c >> 6);
        out[j++] = 0x80 | (c & 63);
      } else if (c < 0x10000) {
        out[j++] = 0xe0 | (c >> 12);
        out[j++] = 0x80 | ((c >> 6) & 63);
        out[j++] = 0x80 | (c & 63);
      } else {
        out[j++] = 0xf0 | (c >> 18);
        out[j++] = 0x80 | ((c >> 12) & 63);
        out[j++] = 0x80 | ((c >> 6) & 63);
        out[j++] = 0x80 | (c & 63);
      }
    }
    return new Uint8ArrayC(out.buffer, 0, j).slice();
  }
  // utf8Decode decodes b[0:end]; it returns [string, index of the first byte
  // of an incomplete trailing sequence] so streaming can keep that tail.
  function utf8Decode(b, fatal, stream) {
    let s = "";
    let chunk = "";
    let i = 0;
    const n = b.length;
    while (i < n) {
      const c = b[i];
      let cp = -1;
      let need = 0;
      if (c < 0x80) {
        cp = c;
      } else if (c >= 0xc2 && c <= 0xdf) {
        need = 1;
        cp = c & 0x1f;
      } else if (c >= 0xe0 && c <= 0xef) {
        need = 2;
        cp = c & 0x0f;
      } else if (c >= 0xf0 && c <= 0xf4) {
        need = 3;
        cp = c & 0x07;
      }
      if (cp < 0) {
        if (fatal) throw new TypeErrorC("TextDecoder: invalid UTF-8 data");
        chunk += "\ufffd";
        i++;
        continue;
      }
      if (need > 0) {
        if (stream && i + need >= n) {
          // The sequence may continue in the next chunk: keep it as the tail
          // unless what is here already proves it invalid.
          let ok = true;
          for (let k = 1; i + k < n; k++) {
            if ((b[i + k] & 0xc0) !== 0x80) {
              ok = false;
              break;
            }
          }
          if (ok) return [s + chunk, i];
        }
        let k = 1;
        for (; k <= need; k++) {
          const d = b[i + k];
          if (d === undefined || (d & 0xc0) !== 0x80) break;
          if (k === 1) {
            if (c === 0xe0 && d < 0xa0) break;
            if (c === 0xed && d > 0x9f) break;
            if (c === 0xf0 && d < 0x90) break;
            if (c === 0xf4 && d > 0x8f) break;
          }
          cp = (cp << 6) | (d & 0x3f);
        }
        if (k <= need) {
          if (fatal) throw new TypeErrorC("TextDecoder: invalid UTF-8 data");
          chunk += "\ufffd";
          i += k;
          continue;
        }
        i += need + 1;
      } else {
        i++;
      }
      if (cp >= 0x10000) {
        cp -= 0x10000;
        chunk += fromCharCode(0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
      } else {
        chunk += fromCharCode(cp);
      }
      if (chunk.length > 4096) {
        s += chunk;
        chunk = "";
      }
    }
    return [s + chunk, n];
  }
  class TextEncoder {
    get encoding() {
      return "utf-8";
    }
    encode(input) {
      return utf8Encode(input === undefined ? "" : input);
    }
    encodeInto(input, dest) {
      if (!(dest instanceof Uint8ArrayC)) throw new TypeErrorC("TextEncoder.encodeInto: the destination must be a Uint8Array");
      const s = StringC(input);
      let read = 0;
      let written = 0;
      for (let i = 0; i < s.length; i++) {
        let unit = apply(charCodeAt, s, [i]);
        let units = 1;
        if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < s.length) {
          const d = apply(charCodeAt, s, [i + 1]);
          if (d >= 0xdc00 && d <= 0xdfff) units = 2;
        }
        const bytes = utf8Encode(apply(stringSlice, s, [i, i + units]));
        if (written + bytes.length > dest.length) break;
        for (let k = 0; k < bytes.length; k++) dest[written++] = bytes[k];
        read += units;
        i += units - 1;
      }
      return { read, written };
    }
  }
  const utf8Labels = create(null);
  utf8Labels["utf-8"] = true;
  utf8Labels["utf8"] = true;
  utf8Labels["unicode-1-1-utf-8"] = true;
  class TextDecoder {
    #fatal;
    #ignoreBOM;
    #tail;
    #bomSeen;
    constructor(label, options) {
      const l = label === undefined ? "utf-8" : StringC(label).trim().toLowerCase();
      if (!utf8Labels[l]) throw new RangeErrorC("TextDecoder: only UTF-8 is supported, got " + StringC(label));
      this.#fatal = !!(options && options.fatal);
      this.#ignoreBOM = !!(options && options.ignoreBOM);
      this.#tail = new Uint8ArrayC(0);
      this.#bomSeen = false;
    }
    get encoding() {
      return "utf-8";
    }
    get fatal() {
      return this.#fatal;
    }
    get ignoreBOM() {
      return this.#ignoreBOM;
    }
    decode(input, options) {
      const stream = !!(options && options.stream);
      let b = toBytes(input);
      if (this.#tail.length > 0) {
        const joined = new Uint8ArrayC(this.#tail.length + b.length);
        joined.set(this.#tail, 0);
        joined.set(b, this.#tail.length);
        b = joined;
      }
      let start = 0;
      if (!this.#ignoreBOM && !this.#bomSeen) {
        // A BOM split across chunks: wait until three bytes are here,
        // unless what is here already cannot start one.
        const bomPrefix = (b.length < 1 || b[0] === 0xef) && (b.length < 2 || b[1] === 0xbb) && (b.length < 3 || b[2] === 0xbf);
        if (stream && bomPrefix && b.length < 3) {
          this.#tail = b.slice();
          return "";
        }
        if (b.length >= 3 && bomPrefix) start = 3;
        if (b.length > 0) this.#bomSeen = stream;
      }
      const r = utf8Decode(b.subarray(start), this.#fatal, stream);
      this.#tail = stream ? b.slice(start + r[1]) : new Uint8ArrayC(0);
      if (!stream) this.#bomSeen = false;
      return r[0];
    }
  }
  return { TextEncoder, TextDecoder };
})
