// web.js: DOMException, btoa/atob, queueMicrotask and structuredClone.
//
// A chunk of the sandbox's globals, compiled on its own and read into a VM
// only when a script first uses one of them (chunks.go): most runs use none,
// and every VM would pay for reading and running them. P is what
// bootstrap.js hands over: the primordials as they were before any agent
// code ran, and a few helpers.
//
// Not in §3.5, but pure functions of their input that scripts written for
// browsers, Node and Deno use; each is what the HTML and WebIDL standards
// say, errors included. Each is also made on first use within the chunk.
// What they use of the built-ins beyond P they take as it is at that
// moment: a script that replaced a built-in method before its first
// structuredClone gets a clone made with it. They are the script's own
// tools and tell the host nothing, so that is the script's business.
(function web(P) {
  "use strict";
  const { ArrayBufferC, ArrayIsArray, DataViewC, DateC, ErrorC, ObjectC, PromiseC, StringC, SymbolIterator, SymbolToStringTag, TypeErrorC, Uint8ArrayC, apply, charCodeAt, create, defineProperty, freeze, fromCharCode, g, getOwnPropertyDescriptor, getPrototypeOf, isA, isView, objectKeys, promiseThen, hostClasses } = P;

  // makeDOMException makes DOMException (WebIDL), the error btoa, atob and
  // structuredClone throw: name, message and the legacy code are getters on
  // the prototype, which inherits from Error.prototype.
  function makeDOMException() {
    const legacyCodes = create(null);
    const constants = [
      ["INDEX_SIZE_ERR", "IndexSizeError"], ["DOMSTRING_SIZE_ERR", ""], ["HIERARCHY_REQUEST_ERR", "HierarchyRequestError"],
      ["WRONG_DOCUMENT_ERR", "WrongDocumentError"], ["INVALID_CHARACTER_ERR", "InvalidCharacterError"], ["NO_DATA_ALLOWED_ERR", ""],
      ["NO_MODIFICATION_ALLOWED_ERR", "NoModificationAllowedError"], ["NOT_FOUND_ERR", "NotFoundError"], ["NOT_SUPPORTED_ERR", "NotSupportedError"],
      ["INUSE_ATTRIBUTE_ERR", "InUseAttributeError"], ["INVALID_STATE_ERR", "InvalidStateError"], ["SYNTAX_ERR", "SyntaxError"],
      ["INVALID_MODIFICATION_ERR", "InvalidModificationError"], ["NAMESPACE_ERR", "NamespaceError"], ["INVALID_ACCESS_ERR", "InvalidAccessError"],
      ["VALIDATION_ERR", ""], ["TYPE_MISMATCH_ERR", "TypeMismatchError"], ["SECURITY_ERR", "SecurityError"], ["NETWORK_ERR", "NetworkError"],
      ["ABORT_ERR", "AbortError"], ["URL_MISMATCH_ERR", "URLMismatchError"], ["QUOTA_EXCEEDED_ERR", "QuotaExceededError"],
      ["TIMEOUT_ERR", "TimeoutError"], ["INVALID_NODE_TYPE_ERR", "InvalidNodeTypeError"], ["DATA_CLONE_ERR", "DataCloneError"],
    ];
    class DOMException extends ErrorC {
      #name;
      #message;
      constructor(message, options) {
        super();
        this.#message = message === undefined ? "" : StringC(message);
        if (options !== null && (typeof options === "object" || typeof options === "function")) {
          // The newer form: new DOMException(message, { name, cause }).
          const name = options.name;
          this.#name = name === undefined ? "Error" : StringC(name);
          if ("cause" in options) {
            defineProperty(this, "cause", { __proto__: null, value: options.cause, writable: true, enumerable: false, configurable: true });
          }
        } else {
          this.#name = options === undefined ? "Error" : StringC(options);
        }
      }
      get name() {
        return this.#name;
      }
      get message() {
        return this.#message;
      }
      get code() {
        const c = legacyCodes[this.#name];
        return c === undefined ? 0 : c;
      }
      static _is(v) {
        return v !== null && typeof v === "object" && #name in v;
      }
    }
    const d = { __proto__: null, value: 0, writable: false, enumerable: true, configurable: false };
    for (let i = 0; i < constants.length; i++) {
      d.value = i + 1;
      defineProperty(DOMException, constants[i][0], d);
      defineProperty(DOMException.prototype, constants[i][0], d);
      if (constants[i][1] !== "") legacyCodes[constants[i][1]] = i + 1;
    }
    defineProperty(DOMException.prototype, SymbolToStringTag, { value: "DOMException", configurable: true });
    const is = DOMException._is;
    delete DOMException._is;
    return { DOMException, is };
  }
  let domException; // made by the first use of DOMException or domError
  function domClass() {
    if (domException === undefined) domException = makeDOMException();
    return domException;
  }
  function domError(message, name) {
    return new (domClass().DOMException)(message, name);
  }

  // makeBase64 makes btoa and atob (HTML): strings of code units 0-255 to
  // base64 and back. atob is the forgiving-base64 decode of the Infra
  // standard (white space ignored, padding optional).
  function makeBase64() {
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let sixBits; // code unit -> value, made by the first atob
    const table = function () {
      const t = create(null);
      for (let i = 0; i < 64; i++) t[apply(charCodeAt, alphabet, [i])] = i;
      return t;
    };
    const charAt = String.prototype.charAt;
    const Uint16ArrayC = Uint16Array;
    function text(data, fn) {
      if (typeof data === "symbol") throw new TypeErrorC(fn + ": a Symbol cannot be converted to a string");
      return StringC(data);
    }
    function btoa(data) {
      if (arguments.length < 1) throw new TypeErrorC("btoa: 1 argument required, but only 0 present");
      const s = text(data, "btoa");
      const n = s.length;
      let out = "";
      let chunk = "";
      for (let i = 0; i < n; i += 3) {
        const a = apply(charCodeAt, s, [i]);
        const b = i + 1 < n ? apply(charCodeAt, s, [i + 1]) : 0;
        const c = i + 2 < n ? apply(charCodeAt, s, [i + 2]) : 0;
        if (a > 255 || b > 255 || c > 255) {
          throw domError("btoa: the string contains characters outside of the Latin1 range (code point above 255); encode it to bytes first, e.g. with TextEncoder", "InvalidCharacterError");
        }
        const bits = (a << 16) | (b << 8) | c;
        chunk += apply(charAt, alphabet, [bits >> 18]) + apply(charAt, alphabet, [(bits >> 12) & 63]) +
          (i + 1 < n ? apply(charAt, alphabet, [(bits >> 6) & 63]) : "=") + (i + 2 < n ? apply(charAt, alphabet, [bits & 63]) : "=");
        if (chunk.length >= 4096) {
          out += chunk;
          chunk = "";
        }
      }
      return out + chunk;
    }
    function atob(data) {
      if (arguments.length < 1) throw new TypeErrorC("atob: 1 argument required, but only 0 present");
      const s = text(data, "atob");
      // Forgiving-base64 decode: drop ASCII white space, then the padding.
      // (A typed array: no index setter planted on Array.prototype can
      // intercept it.)
      const units = new Uint16ArrayC(s.length);
      let n = 0;
      for (let i = 0; i < s.length; i++) {
        const c = apply(charCodeAt, s, [i]);
        if (c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d || c === 0x20) continue;
        units[n++] = c;
      }
      if (n % 4 === 0 && n > 0 && units[n - 1] === 0x3d) {
        n--;
        if (units[n - 1] === 0x3d) n--;
      }
      const bad = function () {
        return domError("atob: the string is not correctly encoded base64", "InvalidCharacterError");
      };
      if (n % 4 === 1) throw bad();
      if (sixBits === undefined) sixBits = table();
      let out = "";
      let chunk = "";
      let buffer = 0;
      let bitCount = 0;
      for (let i = 0; i < n; i++) {
        const v = sixBits[units[i]];
        if (v === undefined) throw bad();
        buffer = (buffer << 6) | v;
        bitCount += 6;
        if (bitCount === 24) {
          chunk += fromCharCode((buffer >> 16) & 255, (buffer >> 8) & 255, buffer & 255);
          buffer = 0;
          bitCount = 0;
          if (chunk.length >= 4096) {
            out += chunk;
            chunk = "";
          }
        }
      }
      // What is left: 12 bits (one byte and 4 bits to discard) or 18 bits
      // (two bytes and 2 bits to discard).
      if (bitCount === 12) chunk += fromCharCode((buffer >> 4) & 255);
      else if (bitCount === 18) chunk += fromCharCode((buffer >> 10) & 255, (buffer >> 2) & 255);
      return out + chunk;
    }
    return { btoa, atob };
  }
  let base64;
  function base64Of() {
    if (base64 === undefined) base64 = makeBase64();
    return base64;
  }

  // makeQueueMicrotask makes queueMicrotask (HTML): the callback runs
  // as a microtask, after the current job and before any timer. An
  // exception it throws is reported as an unhandled rejection, and ends the
  // run like any uncaught exception.
  function makeQueueMicrotask() {
    const species = create(null);
    species[Symbol.species] = PromiseC;
    freeze(species);
    const resolveNow = function (resolve) {
      resolve();
    };
    function queueMicrotask(callback) {
      if (arguments.length < 1) throw new TypeErrorC("queueMicrotask: 1 argument required, but only 0 present");
      if (typeof callback !== "function") throw new TypeErrorC("queueMicrotask: the callback must be a function");
      const p = new PromiseC(resolveNow);
      // then() must not find a constructor that agent code replaced.
      defineProperty(p, "constructor", { __proto__: null, value: species });
      apply(promiseThen, p, [
        function () {
          apply(callback, undefined, []);
        },
      ]);
    }
    return queueMicrotask;
  }

  // makeStructuredClone makes structuredClone (HTML): a deep copy by
  // the structured clone algorithm, within the sandbox. Primitives (not
  // symbols), Boolean/Number/BigInt/String objects, Date, RegExp,
  // ArrayBuffer (resizable ones stay resizable), typed arrays and DataView
  // (sharing buffers as the original did), Map, Set, Error (name, message,
  // stack), DOMException, arrays (holes and extra properties kept) and
  // plain objects (own enumerable string keys, getters called; prototypes
  // are not kept); cycles and shared references are preserved. Functions,
  // symbols, WeakMap, WeakSet, WeakRef-like and host objects (URL,
  // URLSearchParams, TextEncoder, TextDecoder) throw DataCloneError.
  // options.transfer lists ArrayBuffers that are moved into the copy (the
  // originals are detached).
  function makeStructuredClone() {
    const MapC = Map;
    const SetC = Set;
    const RegExpC = RegExp;
    const { get: mapGet, set: mapSet, has: mapHas, forEach: mapForEach } = Map.prototype;
    const { add: setAdd, forEach: setForEach } = Set.prototype;
    const weakMapHas = WeakMap.prototype.has;
    const weakSetHas = WeakSet.prototype.has;
    const isError = ErrorC.isError;
    const hasOwn = Object.hasOwn;
    const getter = function (proto, name) {
      return getOwnPropertyDescriptor(proto, name).get;
    };
    const mapSize = getter(Map.prototype, "size");
    const setSize = getter(Set.prototype, "size");
    const regexpSource = getter(RegExp.prototype, "source");
    const regexpFlags = getter(RegExp.prototype, "flags");
    const bufferByteLength = getter(ArrayBuffer.prototype, "byteLength");
    const bufferResizable = getter(ArrayBuffer.prototype, "resizable");
    const bufferMaxByteLength = getter(ArrayBuffer.prototype, "maxByteLength");
    const bufferDetached = getter(ArrayBuffer.prototype, "detached");
    const bufferTransfer = ArrayBuffer.prototype.transfer;
    const TypedArrayProto = getPrototypeOf(Uint8Array.prototype);
    const typedArrayTag = getter(TypedArrayProto, SymbolToStringTag);
    const typedArrayBuffer = getter(TypedArrayProto, "buffer");
    const typedArrayOffset = getter(TypedArrayProto, "byteOffset");
    const typedArrayLength = getter(TypedArrayProto, "length");
    const dataViewBuffer = getter(DataView.prototype, "buffer");
    const dataViewOffset = getter(DataView.prototype, "byteOffset");
    const dataViewLength = getter(DataView.prototype, "byteLength");
    const typedArrays = create(null);
    for (const name of ["Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array",
      "Float16Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array"]) {
      if (typeof g[name] === "function") typedArrays[name] = g[name];
    }
    const valueOf = [Boolean.prototype.valueOf, Number.prototype.valueOf, BigInt.prototype.valueOf, String.prototype.valueOf];
    const symbolValueOf = Symbol.prototype.valueOf;
    const dateGetTime = DateC.prototype.getTime;
    const errorNames = create(null);
    for (const name of ["Error", "EvalError", "RangeError", "ReferenceError", "SyntaxError", "TypeError", "URIError"]) errorNames[name] = g[name];
    // Host objects: not serializable (WebIDL platform objects).
    const DOMExceptionC = domClass().DOMException;
    const isDOMException = domClass().is;

    const ObjectProto = ObjectC.prototype;

    function cloneError(what) {
      return domError("structuredClone: " + what + " could not be cloned", "DataCloneError");
    }
    // brand reports whether f accepts v as its receiver: the way to tell
    // a Date, a Map, ... whatever its prototype says.
    function brand(f, v, args) {
      try {
        apply(f, v, args === undefined ? [] : args);
        return true;
      } catch (_) {
        return false;
      }
    }
    function copyBuffer(v) {
      if (apply(bufferDetached, v, [])) throw cloneError("a detached ArrayBuffer");
      const n = apply(bufferByteLength, v, []);
      const out = apply(bufferResizable, v, []) ? new ArrayBufferC(n, { maxByteLength: apply(bufferMaxByteLength, v, []) }) : new ArrayBufferC(n);
      new Uint8ArrayC(out).set(new Uint8ArrayC(v));
      return out;
    }
    // clone copies v; memory maps what was copied to its copy (cycles,
    // shared references, transferred buffers).
    function clone(v, memory) {
      const t = typeof v;
      if (t === "symbol") throw cloneError(StringC(v));
      if (t === "function") throw cloneError("function " + (typeof v.name === "string" && v.name !== "" ? v.name : "(anonymous)"));
      if (v === null || t !== "object") return v;
      if (apply(mapHas, memory, [v])) return apply(mapGet, memory, [v]);
      // Arrays and plain objects, the common case, without a brand check
      // that throws for them (an object made from a Date or a Map whose
      // prototype was then set to Object.prototype is copied as a plain
      // object).
      const proto = getPrototypeOf(v);
      if (ArrayIsArray(v)) return cloneOrdinary(v, memory, true);
      if (proto === ObjectProto) return cloneOrdinary(v, memory, false);
      if (proto === null) {
        if (v[SymbolToStringTag] === "Module") throw cloneError("a module namespace");
        return cloneOrdinary(v, memory, false);
      }
      let out;
      if (isView(v)) {
        const tag = apply(typedArrayTag, v, []);
        if (tag !== undefined) {
          const buf = clone(apply(typedArrayBuffer, v, []), memory);
          out = new typedArrays[tag](buf, apply(typedArrayOffset, v, []), apply(typedArrayLength, v, []));
        } else {
          const buf = clone(apply(dataViewBuffer, v, []), memory);
          out = new DataViewC(buf, apply(dataViewOffset, v, []), apply(dataViewLength, v, []));
        }
      } else if (isDOMException(v)) {
        out = new DOMExceptionC(v.message, v.name);
      } else if (isError(v)) {
        let name = v.name;
        if (typeof name !== "string" || errorNames[name] === undefined) name = "Error";
        const desc = getOwnPropertyDescriptor(v, "message");
        out = desc !== undefined && "value" in desc ? new errorNames[name](StringC(desc.value)) : new errorNames[name]();
        const stack = getOwnPropertyDescriptor(v, "stack");
        if (stack !== undefined && typeof stack.value === "string") {
          defineProperty(out, "stack", { __proto__: null, value: stack.value, writable: true, enumerable: false, configurable: true });
        }
      } else if (brand(mapSize, v)) {
        // Entries are read first, then copied, so that copying cannot
        // change what is copied.
        const keys = create(null); // null prototypes: no setter planted
        const values = create(null); // on Array.prototype intercepts them
        let n = 0;
        apply(mapForEach, v, [function (value, key) { keys[n] = key; values[n++] = value; }]);
        out = new MapC();
        apply(mapSet, memory, [v, out]);
        for (let i = 0; i < n; i++) apply(mapSet, out, [clone(keys[i], memory), clone(values[i], memory)]);
        return out;
      } else if (brand(setSize, v)) {
        const values = create(null);
        let n = 0;
        apply(setForEach, v, [function (value) { values[n++] = value; }]);
        out = new SetC();
        apply(mapSet, memory, [v, out]);
        for (let i = 0; i < n; i++) apply(setAdd, out, [clone(values[i], memory)]);
        return out;
      } else if (brand(dateGetTime, v)) {
        out = new DateC(apply(dateGetTime, v, []));
      } else if (v !== RegExpC.prototype && brand(regexpSource, v)) {
        out = new RegExpC(apply(regexpSource, v, []), apply(regexpFlags, v, []));
      } else if (brand(bufferByteLength, v)) {
        out = copyBuffer(v);
      } else {
        for (let i = 0; i < valueOf.length; i++) {
          let x;
          try {
            x = apply(valueOf[i], v, []);
          } catch (_) {
            continue;
          }
          out = ObjectC(x); // a Boolean, Number, BigInt or String object
          apply(mapSet, memory, [v, out]);
          return out;
        }
        if (brand(symbolValueOf, v)) throw cloneError("a Symbol object");
        if (brand(weakMapHas, v, [ObjectProto])) throw cloneError("a WeakMap");
        if (brand(weakSetHas, v, [ObjectProto])) throw cloneError("a WeakSet");
        const hc = hostClasses();
        for (let i = 0; i < hc.length; i++) {
          if (hc[i] !== undefined && isA(v, hc[i])) throw cloneError("a " + hc[i].name);
        }
        if (isA(v, PromiseC)) throw cloneError("a Promise");
        return cloneOrdinary(v, memory, false);
      }
      apply(mapSet, memory, [v, out]);
      return out;
    }
    // cloneOrdinary copies an array (its length, holes and every own
    // enumerable property) or any other object (its own enumerable string
    // keys, getters called, as a plain object).
    function cloneOrdinary(v, memory, array) {
      const keys = objectKeys(v);
      let out;
      if (array) {
        out = [];
        out.length = v.length;
      } else {
        out = {};
      }
      apply(mapSet, memory, [v, out]);
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i];
        if (!hasOwn(v, k)) continue; // a getter deleted it
        defineProperty(out, k, { __proto__: null, value: clone(v[k], memory), writable: true, enumerable: true, configurable: true });
      }
      return out;
    }
    function structuredClone(value, options) {
      if (arguments.length < 1) throw new TypeErrorC("structuredClone: 1 argument required, but only 0 present");
      const transfer = create(null);
      let transfers = 0;
      if (options !== undefined && options !== null) {
        if (typeof options !== "object" && typeof options !== "function") throw new TypeErrorC("structuredClone: options must be an object");
        const list = options.transfer;
        if (list !== undefined) {
          if (list === null || typeof list !== "object" || typeof list[SymbolIterator] !== "function") {
            throw new TypeErrorC("structuredClone: options.transfer must be an array of ArrayBuffers");
          }
          for (const x of list) {
            if (x === null || (typeof x !== "object" && typeof x !== "function")) throw new TypeErrorC("structuredClone: options.transfer must contain only objects");
            transfer[transfers++] = x;
          }
        }
      }
      const memory = new MapC();
      for (let i = 0; i < transfers; i++) {
        const x = transfer[i];
        if (apply(mapHas, memory, [x])) throw domError("structuredClone: an ArrayBuffer is listed twice in transfer", "DataCloneError");
        if (!brand(bufferByteLength, x)) throw domError("structuredClone: only ArrayBuffers can be transferred", "DataCloneError");
        if (apply(bufferDetached, x, [])) throw domError("structuredClone: a detached ArrayBuffer cannot be transferred", "DataCloneError");
        apply(mapSet, memory, [x, copyBuffer(x)]);
      }
      const out = clone(value, memory);
      // The copy is complete: now the transferred buffers move (their
      // contents are in the copy; the originals are detached).
      for (let i = 0; i < transfers; i++) apply(bufferTransfer, transfer[i], [0]);
      return out;
    }
    return structuredClone;
  }

  return {
    DOMException: () => domClass().DOMException,
    btoa: () => base64Of().btoa,
    atob: () => base64Of().atob,
    queueMicrotask: makeQueueMicrotask,
    structuredClone: makeStructuredClone,
  };
})
