// bootstrap.js runs once in every fresh VM, as a global script, before any
// agent code. It turns a bare QuickJS context into the sandbox of
// codemode-spec §3.5 and hands the host the few functions it drives the VM
// with.
//
// Invariants:
//   - The host functions registered by Go (__cm_*) are captured here and
//     deleted from the global object before this script ends; agent code never
//     sees them.
//   - Everything this file calls after agent code has started is captured
//     now ("primordials") and called directly or through Reflect.apply, never
//     looked up on a prototype the agent can reach. Agent code can pollute
//     Object.prototype, Array.prototype or JSON and the host still reports
//     what really happened. (The web helpers, btoa to structuredClone, are
//     made on first use from the built-ins as they are then: they report
//     nothing to the host.)
//   - The original Function, AsyncFunction, GeneratorFunction and
//     AsyncGeneratorFunction constructors become unreachable: code from
//     strings is impossible (§3.5, §11).
(function bootstrap() {
  "use strict";
  const g = globalThis;
  const H = {
    call: g.__cm_call, // (op, payloadJSON) -> promise, or the JSON of a refusal: start an async host operation
    log: g.__cm_log, // (level, message) -> bool: false once logs are truncated
    timer: g.__cm_timer, // (id, ms): schedule fire(id)
    clear: g.__cm_clear, // (id): cancel a timer
    done: g.__cm_done, // (ok, reason): the agent module settled
    url: g.__cm_url, // (op, a, b, c) -> string: WHATWG URL operations
    install: g.__cm_install, // (fail, fire, watch, result, determinize, isHostLimit)
    note: g.__cm_note, // (kind, detail): a warning for the run (locale.go)
    // What the host describes in Go once the script has ended (describe.go):
    errclass: g.__cm_errclass, // (name, prototype): an @codemode/errors class
    thrown: g.__cm_thrown, // (value): what a timer callback or the result threw
    strguard: g.__cm_strguard, // (fallback): the string searches, for the engine's guard
  };
  for (const k of ["__cm_call", "__cm_log", "__cm_timer", "__cm_clear", "__cm_done", "__cm_url", "__cm_install", "__cm_note", "__cm_errclass", "__cm_thrown", "__cm_strguard"]) {
    delete g[k];
  }

  // Primordials.
  const ObjectC = Object;
  const ArrayIsArray = Array.isArray;
  const { freeze, defineProperty, create, getPrototypeOf, getOwnPropertyDescriptor, keys: objectKeys } = Object;
  const { apply, construct, ownKeys } = Reflect;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const PromiseC = Promise;
  const promiseThen = Promise.prototype.then;
  const StringC = String;
  const NumberC = Number;
  const ErrorC = Error;
  const TypeErrorC = TypeError;
  const RangeErrorC = RangeError;
  const EvalErrorC = EvalError;
  const Uint8ArrayC = Uint8Array;
  const ArrayBufferC = ArrayBuffer;
  const DataViewC = DataView;
  const isView = ArrayBuffer.isView;
  const fromCharCode = String.fromCharCode;
  const charCodeAt = String.prototype.charCodeAt;
  const stringSlice = String.prototype.slice;
  const imul = Math.imul;
  const DateC = Date;
  const SymbolIterator = Symbol.iterator;
  const SymbolToStringTag = Symbol.toStringTag;
  // instanceof consults C[Symbol.hasInstance], which agent code can define
  // on Error or any class it can reach; isA asks the original algorithm.
  const hasInstance = Function.prototype[Symbol.hasInstance];
  const isA = (v, C) => apply(hasInstance, C, [v]);

  // --- Lockdown --------------------------------------------------------------

  // Not in the §3.5 list and either a way to evaluate strings (eval) or a way
  // to observe the host (shared memory, garbage collection timing).
  for (const k of ["eval", "SharedArrayBuffer", "Atomics", "WeakRef", "FinalizationRegistry"]) {
    delete g[k];
  }

  function blockedConstructor(kind) {
    const f = function () {
      throw new EvalErrorC(kind + " constructor is disabled: code generation from strings is not allowed in the sandbox; write the function directly instead");
    };
    defineProperty(f, "name", { value: kind });
    return f;
  }
  const fnProtos = [
    ["Function", Function.prototype],
    ["AsyncFunction", getPrototypeOf(async function () {})],
    ["GeneratorFunction", getPrototypeOf(function* () {})],
    ["AsyncGeneratorFunction", getPrototypeOf(async function* () {})],
  ];
  for (let i = 0; i < fnProtos.length; i++) {
    const kind = fnProtos[i][0];
    const proto = fnProtos[i][1];
    const blocked = blockedConstructor(kind);
    defineProperty(blocked, "prototype", { value: proto, writable: false, enumerable: false, configurable: false });
    // Non-writable and non-configurable: agent code cannot put anything back,
    // and it holds no reference to the original to put back anyway.
    defineProperty(proto, "constructor", { value: blocked, writable: false, enumerable: false, configurable: false });
    if (kind === "Function") {
      defineProperty(g, "Function", { value: blocked, writable: true, enumerable: false, configurable: true });
    }
  }

  // --- Errors (@codemode/errors, §7.1) --------------------------------------

  function ownFields(target, options) {
    if (options === null || typeof options !== "object") return;
    const ks = objectKeys(options);
    for (let i = 0; i < ks.length; i++) {
      const k = ks[i];
      if (k === "hint" || k === "message" || k === "name" || k === "stack") continue;
      // Descriptors built after agent code has started get a null
      // prototype: Object.prototype.get = ... must not turn them into
      // accessors.
      defineProperty(target, k, { __proto__: null, value: options[k], enumerable: true, writable: false, configurable: false });
    }
  }
  class CodemodeError extends ErrorC {
    // hostLimit: a SandboxLimitError the host made when a limit was hit. A
    // private field cannot be read, written or faked by agent code, and
    // its check (isHostLimit) runs no agent code, not even a Proxy trap.
    #hostLimit = false;
    // new CodemodeError(message, { hint, ...fields })
    constructor(message, options) {
      super(message === undefined ? "" : StringC(message));
      const hint = options !== null && typeof options === "object" && options.hint !== undefined ? StringC(options.hint) : "";
      defineProperty(this, "hint", { __proto__: null, value: hint, enumerable: true, writable: false, configurable: false });
      ownFields(this, options);
    }
    static markHostLimit(e) {
      e.#hostLimit = true;
      return e;
    }
    static isHostLimit(e) {
      return typeof e === "object" && e !== null && #hostLimit in e && e.#hostLimit;
    }
  }
  const markHostLimit = CodemodeError.markHostLimit;
  const isHostLimit = CodemodeError.isHostLimit;
  delete CodemodeError.markHostLimit;
  delete CodemodeError.isHostLimit;
  const classes = create(null);
  classes.CodemodeError = CodemodeError;
  function subclass(name) {
    // A class expression per name keeps Function.prototype.name right without
    // generating code from strings.
    const C = { [name]: class extends CodemodeError {} }[name];
    defineProperty(C.prototype, "name", { value: name, writable: false, enumerable: false, configurable: false });
    classes[name] = C;
    return C;
  }
  defineProperty(CodemodeError.prototype, "name", { value: "CodemodeError", writable: false, enumerable: false, configurable: false });
  subclass("SchemaValidationError");
  subclass("ToolNotFoundError");
  subclass("ServerNotFoundError");
  subclass("ToolCallError");
  subclass("AuthenticationError");
  subclass("SandboxLimitError");
  subclass("ApprovalDeniedError");
  {
    const names = objectKeys(classes);
    for (let i = 0; i < names.length; i++) {
      freeze(classes[names[i]].prototype);
      freeze(classes[names[i]]);
      H.errclass(names[i], classes[names[i]].prototype);
    }
  }

  function errorClassOf(e) {
    if (e === null || typeof e !== "object") return "";
    const names = objectKeys(classes);
    // Most derived first: CodemodeError is checked last.
    for (let i = names.length - 1; i >= 0; i--) {
      if (isA(e, classes[names[i]])) return names[i];
    }
    return "";
  }

  // hostError turns the host's {class, message, hint, fields} into an
  // instance of the right class.
  function hostError(info) {
    const C = classes[info.class] || CodemodeError;
    const options = create(null);
    const fields = info.fields;
    if (fields !== null && typeof fields === "object") {
      const ks = objectKeys(fields);
      for (let i = 0; i < ks.length; i++) options[ks[i]] = fields[ks[i]];
    }
    options.hint = info.hint || "";
    const e = new C(info.message, options);
    if (C === classes.SandboxLimitError) markHostLimit(e); // a limit the host enforced
    return e;
  }

  // --- Host calls ----------------------------------------------------------

  function rejected(e) {
    return new PromiseC(function (_, reject) { reject(e); });
  }
  // call starts an async host operation and returns its promise, which the
  // host settles on the event loop (hostcall.go). payload must be JSON data;
  // a call without one sends the host an empty payload ("no argument",
  // which §5.3.1 tells apart from an explicit value).
  function call(op, payload) {
    if (arguments.length < 2) return send(StringC(op), "");
    return sendData(StringC(op), payload);
  }
  function sendData(op, payload) {
    let body;
    try {
      body = encode(payload);
    } catch (e) {
      return rejected(new TypeErrorC("arguments must be JSON data: " + safeMessage(e)));
    }
    return send(op, body);
  }
  function send(op, body) {
    const p = H.call(op, body);
    // A string is the host refusing the call (a limit), as hostError data.
    return typeof p === "string" ? rejected(hostError(parse(p))) : p;
  }
  function encode(payload) {
    // An array is serialised element by element, so that an
    // Array.prototype.toJSON planted by agent code cannot rewrite the
    // arguments of a discovery call wholesale.
    if (ArrayIsArray(payload)) {
      let body = "[";
      for (let i = 0; i < payload.length; i++) {
        const x = stringify(payload[i]);
        body += (i > 0 ? "," : "") + (x === undefined ? "null" : x);
      }
      return body + "]";
    }
    const body = stringify(payload);
    return body === undefined ? "null" : body;
  }
  // fail rejects a host call's promise with the error the host described.
  // site is where the agent's code made the call ("<agent>:line:col"), or
  // "": the error is created here, on the event loop, where no agent frame
  // is on the stack, so its stack trace names the call site instead.
  function fail(reject, data, site) {
    const e = hostError(parse(data));
    if (site !== "") {
      // A descriptor without a prototype: a polluted Object.prototype.get
      // must not turn it into an accessor.
      const d = create(null);
      d.value = "    at " + site + "\n";
      d.writable = true;
      d.configurable = true;
      defineProperty(e, "stack", d);
    }
    reject(e);
  }

  // --- Console (§3.3.1) -----------------------------------------------------

  function safeMessage(e) {
    try {
      if (e !== null && typeof e === "object" && typeof e.message === "string") return e.message;
      return StringC(e);
    } catch (_) {
      return "[Unprintable]";
    }
  }
  function errorString(e) {
    let s;
    try {
      const name = e.name;
      const message = e.message;
      s = (name === undefined ? "Error" : StringC(name)) + (message === undefined || message === "" ? "" : ": " + StringC(message));
      const cls = errorClassOf(e);
      if (cls !== "" && typeof e.hint === "string" && e.hint !== "") s += " (hint: " + e.hint + ")";
    } catch (_) {
      s = "[Unserializable Object]";
    }
    return s;
  }
  function fmt(v) {
    switch (typeof v) {
      case "string":
        return v;
      case "function": {
        let name = "";
        try {
          const d = getOwnPropertyDescriptor(v, "name");
          if (d !== undefined && typeof d.value === "string") name = d.value;
        } catch (_) {}
        return name === "" ? "[Function]" : "[Function: " + name + "]";
      }
      case "object":
        if (v === null) return "null";
        break;
      default:
        // number, boolean, undefined, bigint, symbol: String() semantics.
        return StringC(v);
    }
    if (isA(v, ErrorC)) return errorString(v);
    try {
      const s = stringify(v);
      return s === undefined ? "[Unserializable Object]" : s;
    } catch (_) {
      return "[Unserializable Object]";
    }
  }
  let logsOpen = true;
  function logger(level) {
    const f = function () {
      if (!logsOpen) return;
      let msg = "";
      for (let i = 0; i < arguments.length; i++) {
        if (i > 0) msg += " ";
        msg += fmt(arguments[i]);
      }
      logsOpen = H.log(level, msg);
    };
    defineProperty(f, "name", { value: level });
    return f;
  }
  const consoleObj = create(ObjectC.prototype);
  consoleObj.log = logger("log");
  consoleObj.debug = logger("debug");
  consoleObj.warn = logger("warn");
  consoleObj.error = logger("error");
  // Beyond the spec's four: the methods agents reach for degrade to a log
  // entry of level "log" instead of throwing "not a function" (§3.3.1 keeps
  // its four levels). info is log; trace prefixes "Trace:" (no stack:
  // frames would name the sandbox's internals); table and dir log their
  // data as log does.
  consoleObj.info = logger("log");
  defineProperty(consoleObj.info, "name", { value: "info" });
  {
    const log = consoleObj.log;
    consoleObj.trace = function trace() {
      const args = ["Trace:"];
      for (let i = 0; i < arguments.length; i++) args[i + 1] = arguments[i];
      apply(log, undefined, args);
    };
    consoleObj.table = function table(data) {
      apply(log, undefined, [data]);
    };
    consoleObj.dir = function dir(data) {
      apply(log, undefined, [data]);
    };
  }
  defineProperty(g, "console", { value: consoleObj, writable: true, enumerable: false, configurable: true });

  // --- Timers ---------------------------------------------------------------

  const timers = create(null);
  let timerSeq = 0;
  function setTimeout(callback, delay) {
    if (typeof callback !== "function") {
      throw new TypeErrorC("setTimeout: the callback must be a function (strings are never evaluated)");
    }
    const args = [];
    for (let i = 2; i < arguments.length; i++) args[i - 2] = arguments[i];
    let ms = NumberC(delay);
    if (!(ms > 0)) ms = 0;
    const id = ++timerSeq;
    let scheduled;
    try {
      scheduled = H.timer(id, ms); // throws when the timer limit is reached
    } catch (e) {
      throw markHostLimit(new classes.SandboxLimitError(safeMessage(e), { hint: "await pending timers before scheduling more", limit: "pendingTimers" }));
    }
    // Not scheduled: the module has finished and delayed timers are
    // cancelled (loop.go cancelTimers); the callback is not kept either.
    if (scheduled) timers[id] = [callback, args];
    return id;
  }
  function clearTimeout(id) {
    if (typeof id !== "number" || timers[id] === undefined) return;
    delete timers[id];
    H.clear(id);
  }
  // fire runs a due timer. An exception escaping the callback ends the run
  // like an uncaught one at top level: it is handed to the host, which
  // describes it (describe.go), and fire returns "thrown"; else "".
  function fire(id) {
    const t = timers[id];
    if (t === undefined) return "";
    delete timers[id];
    try {
      apply(t[0], undefined, t[1]);
    } catch (e) {
      H.thrown(e);
      return "thrown";
    }
    return "";
  }
  defineProperty(g, "setTimeout", { value: setTimeout, writable: true, enumerable: false, configurable: true });
  defineProperty(g, "clearTimeout", { value: clearTimeout, writable: true, enumerable: false, configurable: true });

  // --- TextEncoder / TextDecoder (UTF-8 only, as in WinterCG runtimes) ------

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
  defineProperty(g, "TextEncoder", { value: TextEncoder, writable: true, enumerable: false, configurable: true });
  defineProperty(g, "TextDecoder", { value: TextDecoder, writable: true, enumerable: false, configurable: true });

  // --- URL / URLSearchParams (parsing by the host's WHATWG URL parser) ------

  function formParse(s) {
    return parse(H.url("formParse", StringC(s), "", ""));
  }
  function formSerialize(list) {
    return H.url("formSerialize", stringify(list), "", "");
  }
  class URLSearchParams {
    #list;
    #url; // the URL whose query this is, or undefined
    constructor(init) {
      this.#list = [];
      if (init === undefined || init === null) return;
      if (typeof init === "object" || typeof init === "function") {
        if (init instanceof URLSearchParams) {
          this.#list = parse(stringify(init.#list));
          return;
        }
        if (typeof init[SymbolIterator] === "function") {
          for (const pair of init) {
            const p = [];
            for (const x of pair) p[p.length] = x;
            if (p.length !== 2) throw new TypeErrorC("URLSearchParams: each pair must have exactly two items");
            this.#list[this.#list.length] = [StringC(p[0]), StringC(p[1])];
          }
          return;
        }
        const ks = ownKeys(init);
        for (let i = 0; i < ks.length; i++) {
          const k = ks[i];
          if (typeof k !== "string") continue;
          const d = getOwnPropertyDescriptor(init, k);
          if (d && d.enumerable) this.#list[this.#list.length] = [k, StringC(init[k])];
        }
        return;
      }
      let s = StringC(init);
      if (s[0] === "?") s = apply(stringSlice, s, [1]);
      this.#list = formParse(s);
    }
    static _link(params, url, search) {
      params.#url = url;
      params.#list = formParse(search[0] === "?" ? apply(stringSlice, search, [1]) : search);
    }
    static _reset(params, search) {
      params.#list = formParse(search[0] === "?" ? apply(stringSlice, search, [1]) : search);
    }
    #update() {
      if (this.#url !== undefined) setQuery(this.#url, formSerialize(this.#list));
    }
    get size() {
      return this.#list.length;
    }
    append(name, value) {
      this.#list[this.#list.length] = [StringC(name), StringC(value)];
      this.#update();
    }
    delete(name, value) {
      name = StringC(name);
      const out = [];
      for (let i = 0; i < this.#list.length; i++) {
        const p = this.#list[i];
        if (p[0] === name && (value === undefined || p[1] === StringC(value))) continue;
        out[out.length] = p;
      }
      this.#list = out;
      this.#update();
    }
    get(name) {
      name = StringC(name);
      for (let i = 0; i < this.#list.length; i++) if (this.#list[i][0] === name) return this.#list[i][1];
      return null;
    }
    getAll(name) {
      name = StringC(name);
      const out = [];
      for (let i = 0; i < this.#list.length; i++) if (this.#list[i][0] === name) out[out.length] = this.#list[i][1];
      return out;
    }
    has(name, value) {
      name = StringC(name);
      for (let i = 0; i < this.#list.length; i++) {
        const p = this.#list[i];
        if (p[0] === name && (value === undefined || p[1] === StringC(value))) return true;
      }
      return false;
    }
    set(name, value) {
      name = StringC(name);
      value = StringC(value);
      const out = [];
      let found = false;
      for (let i = 0; i < this.#list.length; i++) {
        const p = this.#list[i];
        if (p[0] === name) {
          if (!found) out[out.length] = [name, value];
          found = true;
          continue;
        }
        out[out.length] = p;
      }
      if (!found) out[out.length] = [name, value];
      this.#list = out;
      this.#update();
    }
    sort() {
      // Stable sort by UTF-16 code units of the name, as the spec requires.
      const l = this.#list;
      for (let i = 1; i < l.length; i++) {
        const x = l[i];
        let j = i - 1;
        while (j >= 0 && l[j][0] > x[0]) {
          l[j + 1] = l[j];
          j--;
        }
        l[j + 1] = x;
      }
      this.#update();
    }
    forEach(callback, thisArg) {
      for (let i = 0; i < this.#list.length; i++) apply(callback, thisArg, [this.#list[i][1], this.#list[i][0], this]);
    }
    *entries() {
      for (let i = 0; i < this.#list.length; i++) yield [this.#list[i][0], this.#list[i][1]];
    }
    *keys() {
      for (let i = 0; i < this.#list.length; i++) yield this.#list[i][0];
    }
    *values() {
      for (let i = 0; i < this.#list.length; i++) yield this.#list[i][1];
    }
    [SymbolIterator]() {
      return this.entries();
    }
    toString() {
      return formSerialize(this.#list);
    }
  }
  defineProperty(URLSearchParams.prototype, SymbolToStringTag, { value: "URLSearchParams", configurable: true });
  const linkParams = URLSearchParams._link;
  const resetParams = URLSearchParams._reset;
  delete URLSearchParams._link;
  delete URLSearchParams._reset;

  class URL {
    #c; // components from the host: href, origin, protocol, ...
    #params;
    constructor(url, base) {
      this.#c = base === undefined ? parse(H.url("parse", StringC(url), "", "")) : parse(H.url("parseBase", StringC(url), StringC(base), ""));
    }
    static canParse(url, base) {
      try {
        new URL(url, base);
        return true;
      } catch (_) {
        return false;
      }
    }
    static parse(url, base) {
      try {
        return new URL(url, base);
      } catch (_) {
        return null;
      }
    }
    static _setQuery(u, query) {
      u.#c = parse(H.url("set", u.#c.href, "search", query));
    }
    #set(field, value) {
      this.#c = parse(H.url("set", this.#c.href, field, StringC(value)));
      if (this.#params !== undefined) resetParams(this.#params, this.#c.search);
    }
    get href() {
      return this.#c.href;
    }
    set href(v) {
      this.#c = parse(H.url("parse", StringC(v), "", ""));
      if (this.#params !== undefined) resetParams(this.#params, this.#c.search);
    }
    get origin() {
      return this.#c.origin;
    }
    get protocol() {
      return this.#c.protocol;
    }
    set protocol(v) {
      this.#set("protocol", v);
    }
    get username() {
      return this.#c.username;
    }
    set username(v) {
      this.#set("username", v);
    }
    get password() {
      return this.#c.password;
    }
    set password(v) {
      this.#set("password", v);
    }
    get host() {
      return this.#c.host;
    }
    set host(v) {
      this.#set("host", v);
    }
    get hostname() {
      return this.#c.hostname;
    }
    set hostname(v) {
      this.#set("hostname", v);
    }
    get port() {
      return this.#c.port;
    }
    set port(v) {
      this.#set("port", v);
    }
    get pathname() {
      return this.#c.pathname;
    }
    set pathname(v) {
      this.#set("pathname", v);
    }
    get search() {
      return this.#c.search;
    }
    set search(v) {
      this.#set("search", v);
    }
    get hash() {
      return this.#c.hash;
    }
    set hash(v) {
      this.#set("hash", v);
    }
    get searchParams() {
      if (this.#params === undefined) {
        this.#params = new URLSearchParams();
        linkParams(this.#params, this, this.#c.search);
      }
      return this.#params;
    }
    toString() {
      return this.#c.href;
    }
    toJSON() {
      return this.#c.href;
    }
  }
  defineProperty(URL.prototype, SymbolToStringTag, { value: "URL", configurable: true });
  const setQuery = URL._setQuery;
  delete URL._setQuery;
  defineProperty(g, "URL", { value: URL, writable: true, enumerable: false, configurable: true });
  defineProperty(g, "URLSearchParams", { value: URLSearchParams, writable: true, enumerable: false, configurable: true });

  // --- DOMException, btoa/atob, structuredClone, queueMicrotask -------------
  //
  // Not in §3.5, but pure functions of their input that scripts written for
  // browsers, Node and Deno use; each is what the HTML and WebIDL standards
  // say, errors included. Most runs use none of them, and every VM would pay
  // for making them: each global is an accessor that makes its value on
  // first use and replaces itself with it (lazyGlobal). So, unlike the rest
  // of this file, they take the built-ins as they are at that moment: a
  // script that replaced a built-in method before its first structuredClone
  // gets a clone made with it. They are the script's own tools and tell the
  // host nothing, so that is the script's business.

  // lazyGlobal defines g[name] as an accessor that, on first use, makes its
  // value with make() and replaces itself with a data property holding it;
  // an assignment replaces it too.
  function lazyGlobal(name, make) {
    const become = function (value) {
      defineProperty(g, name, { __proto__: null, value: value, writable: true, enumerable: false, configurable: true });
      return value;
    };
    defineProperty(g, name, {
      __proto__: null,
      get: function () {
        return become(make());
      },
      set: become,
      enumerable: false,
      configurable: true,
    });
  }

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
  lazyGlobal("DOMException", function () {
    return domClass().DOMException;
  });

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
  lazyGlobal("btoa", function () {
    if (base64 === undefined) base64 = makeBase64();
    return base64.btoa;
  });
  lazyGlobal("atob", function () {
    if (base64 === undefined) base64 = makeBase64();
    return base64.atob;
  });

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
  lazyGlobal("queueMicrotask", makeQueueMicrotask);

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
    const hostClasses = [URL, URLSearchParams, TextEncoder, TextDecoder];
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
        for (let i = 0; i < hostClasses.length; i++) {
          if (isA(v, hostClasses[i])) throw cloneError("a " + hostClasses[i].name);
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
  lazyGlobal("structuredClone", makeStructuredClone);

  // --- Locale-sensitive methods without Intl -------------------------------

  // installLocaleNotes wraps the methods ECMA-402 gives locales and options:
  // without Intl they format (and compare) the same whatever they are
  // given. The first call that passes either makes the run carry a
  // LOCALE_IGNORED warning (locale.go) instead of ignoring them silently.
  function installLocaleNotes() {
    let noted = false;
    // check warns once, if the call was given locales or options
    // (args[first], args[first + 1]).
    function check(label, args, first) {
      if (noted || (args[first] === undefined && args[first + 1] === undefined)) return;
      noted = true;
      const locales = args[first];
      const shown = typeof locales === "string" ? stringify(locales) : "…";
      H.note("locale", label + "(" + (first > 0 ? "…, " + shown : shown) + ")");
    }
    // One literal function per method (names and lengths as the originals),
    // put in place by assignment: the cheapest way, and this runs in every
    // VM.
    const TypedArrayProto = getPrototypeOf(Uint8Array.prototype);
    const number = Number.prototype.toLocaleString;
    const bigint = BigInt.prototype.toLocaleString;
    const date = DateC.prototype.toLocaleString;
    const dateDate = DateC.prototype.toLocaleDateString;
    const dateTime = DateC.prototype.toLocaleTimeString;
    const array = Array.prototype.toLocaleString;
    const typed = TypedArrayProto.toLocaleString;
    const compare = String.prototype.localeCompare;
    const upper = String.prototype.toLocaleUpperCase;
    const lower = String.prototype.toLocaleLowerCase;
    Number.prototype.toLocaleString = function toLocaleString() {
      if (arguments.length > 0) check("Number.prototype.toLocaleString", arguments, 0);
      return apply(number, this, arguments);
    };
    BigInt.prototype.toLocaleString = function toLocaleString() {
      if (arguments.length > 0) check("BigInt.prototype.toLocaleString", arguments, 0);
      return apply(bigint, this, arguments);
    };
    DateC.prototype.toLocaleString = function toLocaleString() {
      if (arguments.length > 0) check("Date.prototype.toLocaleString", arguments, 0);
      return apply(date, this, arguments);
    };
    DateC.prototype.toLocaleDateString = function toLocaleDateString() {
      if (arguments.length > 0) check("Date.prototype.toLocaleDateString", arguments, 0);
      return apply(dateDate, this, arguments);
    };
    DateC.prototype.toLocaleTimeString = function toLocaleTimeString() {
      if (arguments.length > 0) check("Date.prototype.toLocaleTimeString", arguments, 0);
      return apply(dateTime, this, arguments);
    };
    Array.prototype.toLocaleString = function toLocaleString() {
      if (arguments.length > 0) check("Array.prototype.toLocaleString", arguments, 0);
      return apply(array, this, arguments);
    };
    TypedArrayProto.toLocaleString = function toLocaleString() {
      if (arguments.length > 0) check("TypedArray.prototype.toLocaleString", arguments, 0);
      return apply(typed, this, arguments);
    };
    String.prototype.localeCompare = function localeCompare(that) {
      if (arguments.length > 1) check("String.prototype.localeCompare", arguments, 1);
      return apply(compare, this, arguments);
    };
    String.prototype.toLocaleUpperCase = function toLocaleUpperCase() {
      if (arguments.length > 0) check("String.prototype.toLocaleUpperCase", arguments, 0);
      return apply(upper, this, arguments);
    };
    String.prototype.toLocaleLowerCase = function toLocaleLowerCase() {
      if (arguments.length > 0) check("String.prototype.toLocaleLowerCase", arguments, 0);
      return apply(lower, this, arguments);
    };
  }
  installLocaleNotes();

  // --- Result (§3.2.2) ---------------------------------------------------------

  defineProperty(g, "__codemode_result__", { value: undefined, writable: true, enumerable: false, configurable: true });

  // result serialises __codemode_result__: "J" + JSON, "E" + a reason, or
  // "T" + a reason when reading or serialising it threw, which the host
  // then describes itself (describe.go) rather than reading the thrown
  // value's properties here. The serialisation is the script's last act:
  // the result's own toJSON methods, getters and Proxy traps run (under
  // the run's limits), and they can change only the result.
  function result() {
    let v;
    try {
      v = g.__codemode_result__;
    } catch (e) {
      H.thrown(e);
      return "Treading __codemode_result__ threw";
    }
    if (v === undefined) return "Jnull";
    switch (typeof v) {
      case "function":
        return "Ethe result is a function; assign plain data (objects, arrays, strings, numbers, booleans, null)";
      case "symbol":
        return "Ethe result is a symbol; assign plain data";
      case "bigint":
        return "Ethe result is a BigInt, which JSON cannot carry; convert it with String() or Number() first";
    }
    try {
      const s = stringify(v);
      if (s === undefined) return "Ethe result has no JSON form";
      notePromises(v);
      return "J" + s;
    } catch (e) {
      H.thrown(e);
      return "Tthe result is not JSON-serialisable";
    }
  }

  // notePromises tells the host (note "promise") when the result, or one of
  // its own data properties or first elements, is a Promise, which JSON
  // makes {}, or a string holding "[object Promise]": a tool call whose
  // value was used without await (UTCP's tools return values, ours
  // promises). Only data properties are read: no getter or toJSON runs
  // again.
  const stringIncludes = String.prototype.includes;
  function notePromises(v) {
    const bad = (x) => isA(x, PromiseC) ? "is a Promise" :
      typeof x === "string" && apply(stringIncludes, x, ["[object Promise]"]) ? 'holds the text "[object Promise]"' : "";
    let why = bad(v);
    if (why !== "") {
      H.note("promise", "the result " + why);
      return;
    }
    if (v === null || typeof v !== "object" || isA(v, PromiseC)) return;
    const ks = ownKeys(v);
    for (let i = 0; i < ks.length && i < 1000; i++) {
      const k = ks[i];
      if (typeof k !== "string") continue;
      const d = getOwnPropertyDescriptor(v, k);
      if (d === undefined || !("value" in d) || !d.enumerable) continue;
      why = bad(d.value);
      if (why !== "") {
        H.note("promise", (ArrayIsArray(v) ? "result[" + k + "]" : "result." + k) + " " + why);
        return;
      }
    }
  }

  // then() looks up the promise's constructor and its Symbol.species, both
  // of which agent code can replace before watch runs. The species getter is
  // pinned, and the watched promise gets its own constructor property that
  // leads back to the real Promise.
  {
    const sd = getOwnPropertyDescriptor(PromiseC, Symbol.species);
    defineProperty(PromiseC, Symbol.species, { get: sd.get, enumerable: false, configurable: false });
  }
  const realSpecies = create(null);
  realSpecies[Symbol.species] = PromiseC;
  freeze(realSpecies);
  function watch(p) {
    defineProperty(p, "constructor", { __proto__: null, value: realSpecies });
    apply(promiseThen, p, [
      function () {
        H.done(true, undefined);
      },
      // The host describes the reason itself, later: after running out of
      // memory, describing needs memory the script no longer has.
      function (e) {
        H.done(false, e);
      },
    ]);
  }

  // determinize makes the run reproducible: Math.random from a seed, and a
  // Date that reads a virtual clock starting at nowMs. It returns the
  // clock's setter: the host moves the clock forward as virtual time passes
  // (timers fire in virtual time in a deterministic run, see loop.go).
  // Replay mode relies on all of it.
  function determinize(seed, nowMs) {
    let s = seed >>> 0;
    // mulberry32: small, fast, good enough for agent code.
    const random = function random() {
      s = (s + 0x6d2b79f5) | 0;
      let t = imul(s ^ (s >>> 15), 1 | s);
      t = (t + imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    defineProperty(Math, "random", { value: random, writable: true, enumerable: false, configurable: true });
    let clock = nowMs;
    const RealDate = DateC;
    const FixedDate = function Date() {
      if (new.target === undefined) return apply(RealDate.prototype.toString, new RealDate(clock), []);
      const args = [];
      for (let i = 0; i < arguments.length; i++) args[i] = arguments[i];
      return construct(RealDate, arguments.length === 0 ? [clock] : args, new.target);
    };
    defineProperty(FixedDate, "prototype", { value: RealDate.prototype, writable: false });
    FixedDate.now = function now() {
      return clock;
    };
    FixedDate.parse = RealDate.parse;
    FixedDate.UTC = RealDate.UTC;
    defineProperty(RealDate.prototype, "constructor", { value: FixedDate, writable: true, enumerable: false, configurable: true });
    defineProperty(g, "Date", { value: FixedDate, writable: true, enumerable: false, configurable: true });
    return function setClock(ms) {
      clock = ms;
    };
  }

  // --- Array.prototype.flat and flatMap (see guard.go) ---------------------

  // The engine's flat and flatMap loop over the length of every array
  // nested in their input without checking the interrupt ([new
  // Array(2 ** 32 - 1)].flat() runs for hours), and guard.go could bound
  // that only by walking the input first. These follow the specification
  // (ECMA-262 Array.prototype.flat, flatMap, FlattenIntoArray,
  // ArraySpeciesCreate) in JavaScript, whose loops the deadline interrupts.
  installFlat();
  function installFlat() {
    const ArrayC = Array;
    const ArrayProto = Array.prototype;
    const SymbolSpecies = Symbol.species;
    const MathTrunc = Math.trunc;
    const maxSafe = 9007199254740991;
    function toIntegerOrInfinity(v) {
      const n = +v; // ToNumber: throws for a BigInt or a Symbol
      if (n !== n) return 0;
      return n === Infinity || n === -Infinity ? n : MathTrunc(n) + 0;
    }
    function toLength(v) {
      const n = toIntegerOrInfinity(v);
      return n <= 0 ? 0 : n < maxSafe ? n : maxSafe;
    }
    function toObject(v, name) {
      if (v === null || v === undefined) throw new TypeErrorC("Array.prototype." + name + " called on null or undefined");
      return ObjectC(v);
    }
    function arraySpeciesCreate(original) {
      if (!ArrayIsArray(original)) return new ArrayC(0);
      let C = original.constructor;
      if (C !== null && typeof C === "object") {
        C = C[SymbolSpecies];
        if (C === null) C = undefined;
      } else if (typeof C === "function") {
        const species = C[SymbolSpecies];
        C = species === null ? undefined : species;
      }
      if (C === undefined) return new ArrayC(0);
      return construct(C, [0]); // a TypeError if C is not a constructor
    }
    function flattenInto(target, source, sourceLen, start, depth, mapper, thisArg) {
      let t = start;
      for (let i = 0; i < sourceLen; i++) {
        if (!(i in source)) continue;
        let element = source[i];
        if (mapper !== undefined) element = apply(mapper, thisArg, [element, i, source]);
        if (depth > 0 && ArrayIsArray(element)) {
          t = flattenInto(target, element, toLength(element.length), t, depth - 1, undefined, undefined);
          continue;
        }
        if (t >= maxSafe) throw new TypeErrorC("Array.prototype.flat: the result would be longer than 2**53 - 1");
        defineProperty(target, t, { __proto__: null, value: element, writable: true, enumerable: true, configurable: true });
        t++;
      }
      return t;
    }
    const methods = {
      flat() {
        const O = toObject(this, "flat");
        const sourceLen = toLength(O.length);
        let depth = 1;
        if (arguments.length > 0 && arguments[0] !== undefined) {
          depth = toIntegerOrInfinity(arguments[0]);
          if (depth < 0) depth = 0;
        }
        const A = arraySpeciesCreate(O);
        flattenInto(A, O, sourceLen, 0, depth, undefined, undefined);
        return A;
      },
      flatMap(mapperFunction) {
        const O = toObject(this, "flatMap");
        const sourceLen = toLength(O.length);
        if (typeof mapperFunction !== "function") throw new TypeErrorC("Array.prototype.flatMap: the mapper must be a function");
        const A = arraySpeciesCreate(O);
        flattenInto(A, O, sourceLen, 0, 1, mapperFunction, arguments[1]);
        return A;
      },
    };
    defineProperty(ArrayProto, "flat", { value: methods.flat, writable: true, enumerable: false, configurable: true });
    defineProperty(ArrayProto, "flatMap", { value: methods.flatMap, writable: true, enumerable: false, configurable: true });
  }

  // --- String searches ------------------------------------------------------
  //
  // String.prototype.indexOf, lastIndexOf, includes, split, replace and
  // replaceAll, given a string to find, compare it at every position of the
  // string searched without checking the interrupt: "a".repeat(2e6).indexOf(
  // "a".repeat(1e6) + "b") takes an hour. The engine's guard (strguard.go in
  // internal/engine) fronts them: small searches run as they are, large
  // indexOf, lastIndexOf and includes run in linear time in Go, and the
  // rest comes here: split, replace and replaceAll of large searches, and
  // any call whose receiver or argument only script code can turn into a
  // string. These follow the specification (ECMA-262
  // String.prototype.split, replace, replaceAll, GetSubstitution), and find
  // each match with the guarded indexOf.
  installStringSearch();
  function installStringSearch() {
    const proto = StringC.prototype;
    const indexOf = proto.indexOf;
    const lastIndexOf = proto.lastIndexOf;
    const includes = proto.includes;
    const SymbolMatch = Symbol.match;
    const SymbolSplit = Symbol.split;
    const SymbolReplace = Symbol.replace;
    const RegExpProto = RegExp.prototype;
    const regexpSource = getOwnPropertyDescriptor(RegExpProto, "source").get;
    const MathMin = Math.min;
    const maxUint32 = 4294967295;
    function coercible(O, name) {
      if (O === null || O === undefined) throw new TypeErrorC("String.prototype." + name + " called on null or undefined");
    }
    function toStr(v) {
      return `${v}`; // ToString: a Symbol throws
    }
    function slice(s, from, to) {
      return to === undefined ? apply(stringSlice, s, [from]) : apply(stringSlice, s, [from, to]);
    }
    function find(S, R, from) {
      return apply(indexOf, S, [R, from]);
    }
    function isRegExp(x) {
      if (x === null || (typeof x !== "object" && typeof x !== "function")) return false;
      const m = x[SymbolMatch];
      if (m !== undefined) return !!m;
      if (x === RegExpProto) return false;
      try {
        apply(regexpSource, x, []); // a TypeError unless x is a RegExp
        return true;
      } catch (_) {
        return false;
      }
    }
    function getMethod(v, key, name) {
      const f = v[key];
      if (f === undefined || f === null) return undefined;
      if (typeof f !== "function") throw new TypeErrorC("String.prototype." + name + ": the search value's " + StringC(key) + " is not a function");
      return f;
    }
    function put(A, i, v) {
      defineProperty(A, i, { __proto__: null, value: v, writable: true, enumerable: true, configurable: true });
    }
    function split(O, separator, limit) {
      coercible(O, "split");
      if (separator !== undefined && separator !== null) {
        const splitter = getMethod(separator, SymbolSplit, "split");
        if (splitter !== undefined) return apply(splitter, separator, [O, limit]);
      }
      const S = toStr(O);
      const lim = limit === undefined ? maxUint32 : limit >>> 0;
      const R = toStr(separator);
      const A = [];
      if (lim === 0) return A;
      if (separator === undefined) {
        put(A, 0, S);
        return A;
      }
      const size = S.length;
      const r = R.length;
      if (r === 0) {
        const head = MathMin(size, lim);
        for (let i = 0; i < head; i++) put(A, i, slice(S, i, i + 1));
        return A;
      }
      if (size === 0) {
        put(A, 0, S);
        return A;
      }
      let n = 0;
      let p = 0;
      let q = find(S, R, 0);
      while (q !== -1) {
        put(A, n++, slice(S, p, q));
        if (n === lim) return A;
        p = q + r;
        q = find(S, R, p);
      }
      put(A, n, slice(S, p));
      return A;
    }
    // substitute is GetSubstitution without captures: $$, $&, $` and $'
    // are replaced, anything else is kept as written.
    function substitute(matched, str, position, template) {
      let result = "";
      let i = 0;
      const t = template.length;
      for (;;) {
        const d = find(template, "$", i);
        if (d === -1 || d === t - 1) return result + slice(template, i);
        result = result + slice(template, i, d);
        const c = apply(charCodeAt, template, [d + 1]);
        if (c === 36) {
          result = result + "$";
        } else if (c === 38) {
          result = result + matched;
        } else if (c === 96) {
          result = result + slice(str, 0, position);
        } else if (c === 39) {
          result = result + slice(str, MathMin(position + matched.length, str.length));
        } else {
          result = result + "$";
          i = d + 1;
          continue;
        }
        i = d + 2;
      }
    }
    function replace(O, searchValue, replaceValue, all) {
      const name = all ? "replaceAll" : "replace";
      coercible(O, name);
      if (searchValue !== undefined && searchValue !== null) {
        if (all && isRegExp(searchValue)) {
          const flags = searchValue.flags;
          coercible(flags, name);
          if (find(toStr(flags), "g", 0) === -1) throw new TypeErrorC("String.prototype.replaceAll: a regular expression must have the global (g) flag");
        }
        const replacer = getMethod(searchValue, SymbolReplace, name);
        if (replacer !== undefined) return apply(replacer, searchValue, [O, replaceValue]);
      }
      const S = toStr(O);
      const R = toStr(searchValue);
      const functional = typeof replaceValue === "function";
      if (!functional) replaceValue = toStr(replaceValue);
      const r = R.length;
      const replacement = function (p) {
        return functional ? toStr(apply(replaceValue, undefined, [R, p, S])) : substitute(R, S, p, replaceValue);
      };
      if (!all) {
        const p = find(S, R, 0);
        if (p === -1) return S;
        return slice(S, 0, p) + replacement(p) + slice(S, p + r);
      }
      // The matches are found as they are replaced: the string searched
      // does not change, so the replacer sees what the specification's
      // list of positions would give it.
      const advance = r === 0 ? 1 : r;
      let result = "";
      let end = 0;
      let p = find(S, R, 0);
      while (p !== -1) {
        result = result + slice(S, end, p) + replacement(p);
        end = p + r;
        p = p + advance > S.length ? -1 : find(S, R, p + advance);
      }
      return end < S.length ? result + slice(S, end) : result;
    }
    H.strguard(function stringSearch(kind, O, a, b) {
      switch (kind) {
        case 0:
          coercible(O, "indexOf");
          return apply(indexOf, toStr(O), [toStr(a), b]);
        case 1:
          coercible(O, "lastIndexOf");
          return apply(lastIndexOf, toStr(O), [toStr(a), b]);
        case 2: {
          coercible(O, "includes");
          const S = toStr(O);
          if (isRegExp(a)) throw new TypeErrorC("String.prototype.includes: the string to find must not be a regular expression");
          return apply(includes, S, [toStr(a), b]);
        }
        case 3:
          return split(O, a, b);
        case 4:
          return replace(O, a, b, false);
        default:
          return replace(O, a, b, true);
      }
    });
  }

  // --- String.raw -------------------------------------------------------------
  //
  // The engine's String.raw reads the length of the template's raw strings,
  // then loops that many times without checking the interrupt, and once the
  // string it builds is too long, or memory has run out, it goes on
  // appending nothing: String.raw({ raw: { length: 2 ** 53 - 1 } }) held a
  // core for ever after its run was answered. This follows the
  // specification (ECMA-262 String.raw); its loop checks the interrupt, and
  // an append past the longest string throws.
  installStringRaw();
  function installStringRaw() {
    const MathTrunc = Math.trunc;
    const maxSafe = 9007199254740991;
    const methods = {
      raw(template) {
        if (template === null || template === undefined) throw new TypeErrorC("String.raw: the template is null or undefined");
        const raw = ObjectC(template).raw;
        if (raw === null || raw === undefined) throw new TypeErrorC("String.raw: the template's raw strings are null or undefined");
        const literals = ObjectC(raw);
        let n = +literals.length; // ToLength: ToNumber throws for a BigInt or a Symbol
        n = n !== n || n <= 0 ? 0 : n < maxSafe ? MathTrunc(n) : maxSafe;
        let R = "";
        for (let i = 0; i < n; i++) {
          R += `${literals[i]}`; // ToString: a Symbol throws
          if (i + 1 < n && i + 1 < arguments.length) R += `${arguments[i + 1]}`;
        }
        return R;
      },
    };
    defineProperty(StringC, "raw", { value: methods.raw, writable: true, enumerable: false, configurable: true });
  }

  // Handoff to the @codemode/internal module, which takes it and deletes it
  // before agent code runs (see sandbox.prewarm).
  const internal = create(null);
  internal.call = call;
  internal.classes = classes;
  internal.freeze = freeze;
  // badInput is the SchemaValidationError (§7.2) of a tool call whose input
  // JSON.stringify refused: a BigInt, a circular reference, a getter or
  // toJSON that throws. The host never sees such a call, so the error is
  // built here, from the route (op is "tool\0<server>\0<tool>") and the
  // place nonJSON finds.
  function badInput(op, exportName, input, e) {
    const parts = create(null); // no Array.prototype setters on the way
    let n = 0;
    let from = 0;
    for (let i = 0; i <= op.length; i++) {
      if (i === op.length || apply(charCodeAt, op, [i]) === 0) {
        parts[n++] = apply(stringSlice, op, [from, i]);
        from = i + 1;
      }
    }
    const budget = create(null);
    budget.n = 10000;
    const found = nonJSON(input, "", "", create(null), 0, budget);
    const path = found === null ? "" : found[0];
    const received = found === null ? "data JSON cannot carry (" + safeMessage(e) + ")" : found[1];
    const options = create(null);
    options.serverId = parts[1];
    options.toolName = parts[2];
    options.exportName = exportName;
    options.path = path;
    options.expected = "JSON data";
    options.received = received;
    options.hint = "pass plain JSON data: numbers or strings instead of BigInt values, and no circular references";
    return new classes.SchemaValidationError("invalid input for " + exportName + " (" + parts[1] + "/" + parts[2] + "): at " +
      (path === "" ? "the top level" : path) + " expected JSON data, received " + received, options);
  }
  // nonJSON returns [JSON Pointer, what is there] for the first place where
  // v stops being JSON data (a BigInt, a circular reference, a getter or
  // toJSON that throws), or null. It runs only after JSON.stringify has
  // thrown, and walks as stringify does: toJSON first, then own enumerable
  // properties. budget bounds the values it visits: getters or a Proxy
  // that make new objects forever would otherwise hold the run until its
  // timeout, where stringify itself gave up at once. ancestors is a
  // null-prototype stack, so that indices planted on Array.prototype cannot
  // intercept it.
  function nonJSON(v, key, path, ancestors, depth, budget) {
    if (--budget.n < 0 || depth > 64) return null;
    let t = typeof v;
    if (v !== null && (t === "object" || t === "bigint")) {
      let toJSON;
      try {
        toJSON = v.toJSON;
      } catch (e) {
        return [path, "a toJSON getter that throws (" + safeMessage(e) + ")"];
      }
      if (typeof toJSON === "function") {
        try {
          v = apply(toJSON, v, [key]);
        } catch (e) {
          return [path, "a toJSON that throws (" + safeMessage(e) + ")"];
        }
        t = typeof v;
      }
    }
    if (t === "bigint") return [path, "a BigInt"];
    if (v === null || t !== "object") return null;
    for (let i = 0; i < depth; i++) {
      if (ancestors[i] === v) return [path, "a circular reference"];
    }
    ancestors[depth] = v;
    let ks;
    try {
      ks = objectKeys(v);
    } catch (e) {
      return null;
    }
    for (let i = 0; i < ks.length; i++) {
      const p = path + "/" + pointerToken(ks[i]);
      let x;
      try {
        x = v[ks[i]];
      } catch (e) {
        return [p, "a getter that throws (" + safeMessage(e) + ")"];
      }
      const found = nonJSON(x, ks[i], p, ancestors, depth + 1, budget);
      if (found !== null) return found;
    }
    return null;
  }
  // pointerToken escapes a key for a JSON Pointer (RFC 6901): ~ is ~0, / is ~1.
  function pointerToken(k) {
    let out = "";
    for (let i = 0; i < k.length; i++) {
      const c = apply(charCodeAt, k, [i]);
      out += c === 126 ? "~0" : c === 47 ? "~1" : fromCharCode(c);
    }
    return out;
  }

  // bindTools makes the async functions of a server module, one per tool:
  // ops[i] is the host operation of tool i, names[i] its export name (the
  // function's .name). A call without an argument sends no payload, so that
  // the host can tell it from an explicit undefined (§5.3.1). Generating
  // this loop's result here, rather than one function per tool in each
  // module's source, keeps a module of hundreds of tools cheap to compile.
  internal.bindTools = function bindTools(ops, names) {
    const out = [];
    for (let i = 0; i < ops.length; i++) {
      const op = StringC(ops[i]);
      const name = names[i];
      const holder = create(null);
      holder[name] = function (input) {
        if (input === undefined) return send(op, ""); // no argument, or undefined
        const t = typeof input;
        if (t === "function" || t === "symbol" || t === "bigint") {
          const e = new TypeErrorC(name + "() takes JSON data (usually an object of named arguments), not a " + t);
          // A tool named `then` makes its module namespace thenable: `await
          // import()` of it calls then(resolve, reject). Throwing (rather
          // than returning a rejection) makes that import fail at once
          // instead of calling the tool and never settling.
          if (name === "then") {
            e.message += "; this server has a tool named `then`, so import it statically (import { then as t } from ...) rather than with await import()";
            throw e;
          }
          return rejected(e);
        }
        let body;
        try {
          body = encode(input);
        } catch (e) {
          return rejected(badInput(op, name, input, e));
        }
        return send(op, body);
      };
      out[i] = freeze(holder[name]);
    }
    return out;
  };
  internal.deepFreeze = function deepFreeze(v) {
    if (v !== null && typeof v === "object") {
      const ks = objectKeys(v);
      for (let i = 0; i < ks.length; i++) deepFreeze(v[ks[i]]);
      freeze(v);
    }
    return v;
  };
  // meta makes a server module's __meta__ (§5.2): head (serverId,
  // serverName, serverVersion) as it is, and tools, the part that costs (an
  // object per tool, frozen), made from its JSON on first read. Most runs
  // never read it; every run imports the module.
  internal.meta = function meta(head, toolsJSON) {
    let made;
    defineProperty(head, "tools", {
      enumerable: true,
      get: function tools() {
        if (made === undefined) made = internal.deepFreeze(parse(toolsJSON));
        return made;
      },
    });
    return freeze(head);
  };
  // importError is the rejected promise that the module of a failed import
  // awaits (vm.go failingModule), with the host's description as a
  // @codemode/errors instance. Awaited rather than thrown: the engine runs
  // a module body as an async function, and a synchronous throw would leave
  // that function's own promise rejected with no handler, which the run
  // would report as an unhandled rejection even when the script caught the
  // import's.
  internal.importError = function importError(data) {
    return rejected(hostError(parse(data)));
  };
  defineProperty(g, "__cm_handoff", { value: freeze(internal), writable: false, enumerable: false, configurable: true });

  H.install(fail, fire, watch, result, determinize, isHostLimit);
})();
