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
    chunk: g.__cm_chunk, // (name) -> the chunk's maker (text.js, url.js, web.js)
    install: g.__cm_install, // (fail, fire, watch, result, determinize, isHostLimit)
    note: g.__cm_note, // (kind, detail): a warning for the run (locale.go)
    // What the host describes in Go once the script has ended (describe.go):
    errclass: g.__cm_errclass, // (name, prototype): an @codemode/errors class
    thrown: g.__cm_thrown, // (value): what a timer callback or the result threw
    strguard: g.__cm_strguard, // (fallback): the string searches, for the engine's guard
  };
  for (const k of ["__cm_call", "__cm_log", "__cm_timer", "__cm_clear", "__cm_done", "__cm_url", "__cm_chunk", "__cm_install", "__cm_note", "__cm_errclass", "__cm_thrown", "__cm_strguard"]) {
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

  // --- Globals made on first use --------------------------------------------
  //
  // TextEncoder, TextDecoder, URL, URLSearchParams, DOMException, btoa, atob,
  // queueMicrotask and structuredClone live in chunks of their own (text.js,
  // url.js, web.js), compiled apart and read into the VM by the host
  // (__cm_chunk) when a script first uses one: most runs use none, and every
  // VM would pay for reading and running them (docs/BENCHMARKS.md). Each
  // global is an accessor until then (lazyGlobal). A chunk takes P, the
  // primordials captured above, so what it makes is as immune to what agent
  // code did to the built-ins before its first use as the rest of this file.

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


  const P = freeze({ __proto__: null, g, H, ObjectC, ArrayIsArray, freeze, defineProperty, create, getPrototypeOf, getOwnPropertyDescriptor, objectKeys, apply, ownKeys, stringify, parse, PromiseC, promiseThen, StringC, ErrorC, TypeErrorC, RangeErrorC, Uint8ArrayC, ArrayBufferC, DataViewC, isView, fromCharCode, charCodeAt, stringSlice, DateC, SymbolIterator, SymbolToStringTag, isA, hostClasses });
  const made = create(null); // chunk name -> what it made
  function chunk(name) {
    let c = made[name];
    if (c === undefined) c = made[name] = H.chunk(name)(P);
    return c;
  }
  // hostClasses lists the host classes made so far (structuredClone refuses
  // their instances; a class not made yet has none).
  function hostClasses() {
    const t = made.text;
    const u = made.url;
    return [u && u.URL, u && u.URLSearchParams, t && t.TextEncoder, t && t.TextDecoder];
  }
  lazyGlobal("TextEncoder", function () {
    return chunk("text").TextEncoder;
  });
  lazyGlobal("TextDecoder", function () {
    return chunk("text").TextDecoder;
  });
  lazyGlobal("URL", function () {
    return chunk("url").URL;
  });
  lazyGlobal("URLSearchParams", function () {
    return chunk("url").URLSearchParams;
  });
  lazyGlobal("DOMException", function () {
    return chunk("web").DOMException();
  });
  lazyGlobal("btoa", function () {
    return chunk("web").btoa();
  });
  lazyGlobal("atob", function () {
    return chunk("web").atob();
  });
  lazyGlobal("queueMicrotask", function () {
    return chunk("web").queueMicrotask();
  });
  lazyGlobal("structuredClone", function () {
    return chunk("web").structuredClone();
  });

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
