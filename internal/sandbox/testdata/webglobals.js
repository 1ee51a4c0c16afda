// Cases for btoa, atob, structuredClone, queueMicrotask and DOMException,
// run both in the sandbox and in Node (TestWebGlobalsMatchNode): each case's
// outcome, its value described by show() or the error it threw, must be the
// same in both. Node implements these from the HTML and WebIDL standards.

function show(v, seen = new Map()) {
  if (v === null) return null;
  switch (typeof v) {
    case "undefined":
      return ["undefined"];
    case "bigint":
      return ["bigint", String(v)];
    case "number":
      return Number.isFinite(v) && !Object.is(v, -0) ? v : ["number", Object.is(v, -0) ? "-0" : String(v)];
    case "string":
    case "boolean":
      return v;
    case "symbol":
      return ["symbol", v.description];
    case "function":
      return ["function"];
  }
  if (seen.has(v)) return ["ref", seen.get(v)];
  seen.set(v, seen.size);
  const tag = Object.prototype.toString.call(v);
  const proto = Object.getPrototypeOf(v);
  const base = [tag, proto === null ? "null" : Object.prototype.hasOwnProperty.call(proto, "constructor") ? proto.constructor.name : "?"];
  if (["[object Boolean]", "[object Number]", "[object String]", "[object BigInt]"].includes(tag)) return [...base, show(v.valueOf(), seen)];
  if (v instanceof Map) return [...base, [...v].map(([k, x]) => [show(k, seen), show(x, seen)])];
  if (v instanceof Set) return [...base, [...v].map((x) => show(x, seen))];
  if (v instanceof Date) return [...base, show(v.getTime())];
  if (v instanceof RegExp) return [...base, v.source, v.flags, v.lastIndex];
  if (v instanceof ArrayBuffer) return [...base, v.byteLength, v.resizable, v.maxByteLength, v.detached, [...new Uint8Array(v)]];
  if (ArrayBuffer.isView(v)) {
    return [...base, v.byteOffset, v.byteLength, show(v.buffer, seen), v instanceof DataView ? null : Array.from(v, (x) => show(x))];
  }
  if (v instanceof DOMException) return [...base, v.name, v.message, v.code, Object.keys(v)];
  if (v instanceof Error) return [...base, v.name, v.message, Object.keys(v), typeof v.stack];
  const keys = Reflect.ownKeys(v).filter((k) => typeof k === "string");
  return [...base, keys.map((k) => {
    const d = Object.getOwnPropertyDescriptor(v, k);
    return [k, d.enumerable, "value" in d ? show(d.value, seen) : ["accessor"]];
  })];
}

function outcome(f) {
  try {
    return { value: show(f()) };
  } catch (e) {
    return { threw: [e.constructor === DOMException ? "DOMException" : e.constructor.name, e.name, e instanceof DOMException ? e.code : null] };
  }
}

class Point {
  #secret = 1;
  constructor() {
    this.x = 1;
    this.y = 2;
  }
  get norm() {
    return 3;
  }
}

const cases = {
  // btoa
  "btoa empty": () => btoa(""),
  "btoa 1": () => btoa("a"),
  "btoa 2": () => btoa("ab"),
  "btoa 3": () => btoa("abc"),
  "btoa latin1": () => btoa("\u00ff\u00fe\u0000\u0080"),
  "btoa all bytes": () => btoa(String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i))),
  "btoa above latin1": () => btoa("\u0100"),
  "btoa emoji": () => btoa("😀"),
  "btoa null": () => btoa(null),
  "btoa undefined": () => btoa(undefined),
  "btoa number": () => btoa(12.5),
  "btoa object": () => btoa({ toString: () => "xyz" }),
  "btoa symbol": () => btoa(Symbol("s")),
  "btoa no argument": () => btoa(),
  // atob
  "atob empty": () => atob(""),
  "atob padded": () => atob("YWJj"),
  "atob pad 1": () => atob("YWI="),
  "atob pad 2": () => atob("YQ=="),
  "atob no padding": () => atob("YQ"),
  "atob no padding 3": () => atob("YWI"),
  "atob white space": () => atob(" Y\tW\nJ\fj\r "),
  "atob one char": () => atob("Y"),
  "atob five chars": () => atob("YWJjZ"),
  "atob bad pad": () => atob("Y==="),
  "atob pad in middle": () => atob("YQ==YQ=="),
  "atob pad not at end": () => atob("Y=Q="),
  "atob only padding": () => atob("===="),
  "atob pad with 3": () => atob("YQ="),
  "atob url alphabet": () => atob("-_-_"),
  "atob non-ascii": () => atob("YW\u00e9J"),
  "atob nonzero trailing bits": () => atob("YR=="),
  "atob vertical tab": () => atob("YW\u000bJj"),
  "atob nbsp": () => atob("YW\u00a0Jj"),
  "atob null": () => atob(null),
  "atob undefined": () => atob(undefined),
  "atob number": () => atob(1234),
  "atob no argument": () => atob(),
  "atob binary": () => atob("AP+AfwE="),
  "atob round trip": () => atob(btoa(String.fromCharCode(...Array.from({ length: 256 }, (_, i) => 255 - i)))),
  // structuredClone: primitives
  "clone undefined": () => structuredClone(undefined),
  "clone null": () => structuredClone(null),
  "clone number": () => structuredClone(-0),
  "clone NaN": () => structuredClone(NaN),
  "clone string": () => structuredClone("s"),
  "clone bigint": () => structuredClone(12345678901234567890n),
  "clone symbol": () => structuredClone(Symbol("s")),
  "clone no argument": () => structuredClone(),
  // wrappers and built-in objects
  "clone Boolean object": () => structuredClone(new Boolean(false)),
  "clone Number object": () => structuredClone(new Number(3)),
  "clone String object": () => structuredClone(new String("ab")),
  "clone BigInt object": () => structuredClone(Object(5n)),
  "clone Symbol object": () => structuredClone(Object(Symbol("s"))),
  "clone Date": () => structuredClone(new Date(123456789)),
  "clone invalid Date": () => structuredClone(new Date(NaN)),
  "clone RegExp": () => {
    const r = /a(b)?/gimsuy;
    r.lastIndex = 3;
    return structuredClone(r);
  },
  "clone RegExp with a property": () => structuredClone(Object.assign(/x/, { extra: 1 })),
  "clone Map": () => structuredClone(new Map([[1, "a"], [{ k: 1 }, [2]]])),
  "clone Set": () => structuredClone(new Set([1, "a", { x: 1 }])),
  "clone Map with a property": () => structuredClone(Object.assign(new Map(), { extra: 1 })),
  // objects and arrays
  "clone object": () => structuredClone({ a: 1, b: "x", c: [true, null], d: { e: undefined } }),
  "clone object key order": () => structuredClone({ b: 1, a: 2, 2: "two", 1: "one" }),
  "clone __proto__ key": () => structuredClone(JSON.parse('{"__proto__": {"x": 1}, "y": 2}')),
  "clone getter": () => structuredClone({ get a() { return 5; }, b: 1 }),
  "clone non-enumerable": () => structuredClone(Object.defineProperty({ a: 1 }, "hidden", { value: 2, enumerable: false })),
  "clone symbol key": () => structuredClone({ [Symbol("k")]: 1, a: 2 }),
  "clone null prototype": () => structuredClone(Object.assign(Object.create(null), { a: 1 })),
  "clone class instance": () => structuredClone(new Point()),
  "clone array": () => structuredClone([1, "two", [3]]),
  "clone sparse array": () => structuredClone([1, , 3, , ]),
  "clone array with a property": () => structuredClone(Object.assign([1, 2], { extra: "x" })),
  "clone long empty array": () => structuredClone(new Array(5)),
  "clone cycle": () => {
    const o = { name: "o" };
    o.self = o;
    o.list = [o];
    return structuredClone(o);
  },
  "clone shared reference": () => {
    const shared = { n: 1 };
    return structuredClone({ a: shared, b: shared, c: [shared] });
  },
  "clone getter that deletes": () => {
    const o = {
      get a() {
        delete this.b;
        return 1;
      },
      b: 2,
      c: 3,
    };
    return structuredClone(o);
  },
  "clone getter that throws": () => structuredClone({ get a() { throw new RangeError("no"); } }),
  // binary data
  "clone ArrayBuffer": () => structuredClone(new Uint8Array([1, 2, 3]).buffer),
  "clone resizable ArrayBuffer": () => {
    const b = new ArrayBuffer(2, { maxByteLength: 8 });
    new Uint8Array(b)[1] = 9;
    return structuredClone(b);
  },
  "clone typed arrays": () => structuredClone([new Int8Array([-1, 2]), new Uint16Array([65535]), new Float64Array([1.5]), new BigInt64Array([-5n]), new Uint8ClampedArray([300])]),
  "clone typed array view": () => structuredClone(new Uint8Array(new Uint8Array([1, 2, 3, 4, 5]).buffer, 1, 3)),
  "clone DataView": () => structuredClone(new DataView(new Uint8Array([1, 2, 3, 4]).buffer, 1, 2)),
  "clone views sharing a buffer": () => {
    const b = new ArrayBuffer(4);
    const c = structuredClone({ x: new Uint8Array(b), y: new Uint16Array(b, 2, 1), b });
    return [c.x.buffer === c.y.buffer, c.x.buffer === c.b];
  },
  "clone typed array with a property": () => structuredClone(Object.assign(new Uint8Array(2), { extra: 1 })),
  // errors
  "clone Error": () => structuredClone(new Error("boom")),
  "clone TypeError": () => structuredClone(new TypeError("t")),
  "clone RangeError without message": () => structuredClone(new RangeError()),
  "clone Error subclass": () => {
    class MyError extends Error {}
    return structuredClone(new MyError("mine"));
  },
  "clone Error with a custom name": () => {
    const e = new Error("n");
    e.name = "Custom";
    return structuredClone(e);
  },
  "clone Error renamed to a standard name": () => {
    const e = new Error("n");
    e.name = "SyntaxError";
    return structuredClone(e);
  },
  "clone Error with an extra property": () => structuredClone(Object.assign(new Error("x"), { code: 7 })),
  "clone DOMException": () => structuredClone(new DOMException("gone", "NotFoundError")),
  // what cannot be cloned
  "clone function": () => structuredClone(function f() {}),
  "clone arrow in an object": () => structuredClone({ f: () => 1 }),
  "clone WeakMap": () => structuredClone(new WeakMap()),
  "clone WeakSet": () => structuredClone(new WeakSet()),
  "clone Promise": () => structuredClone(Promise.resolve(1)),
  "clone URL": () => structuredClone(new URL("https://example.com/")),
  "clone URLSearchParams": () => structuredClone(new URLSearchParams("a=1")),
  "clone TextEncoder": () => structuredClone(new TextEncoder()),
  // transfer
  "transfer": () => {
    const b = new Uint8Array([7, 8]).buffer;
    const c = structuredClone({ b, v: new Uint8Array(b, 1) }, { transfer: [b] });
    return [show(c), b.byteLength, b.detached, c.v.buffer === c.b];
  },
  "transfer twice": () => {
    const b = new ArrayBuffer(1);
    return structuredClone(b, { transfer: [b, b] });
  },
  "transfer a detached buffer": () => {
    const b = new ArrayBuffer(1);
    b.transfer();
    return structuredClone(1, { transfer: [b] });
  },
  "transfer a non-buffer": () => structuredClone(1, { transfer: [{}] }),
  "transfer a primitive": () => structuredClone(1, { transfer: [1] }),
  "transfer not a list": () => structuredClone(1, { transfer: 5 }),
  "transfer empty": () => structuredClone([1], { transfer: [] }),
  "options null": () => structuredClone(1, null),
  "options a number": () => structuredClone(1, 5),
  "clone a detached buffer": () => {
    const b = new ArrayBuffer(1);
    b.transfer();
    return structuredClone(b);
  },
  // DOMException
  "DOMException default": () => new DOMException(),
  "DOMException named": () => new DOMException("m", "NotFoundError"),
  "DOMException unknown name": () => new DOMException("m", "NoSuchError"),
  "DOMException options": () => {
    const e = new DOMException("m", { name: "AbortError", cause: 42 });
    return [show(e), e.cause, Object.getOwnPropertyDescriptor(e, "cause").enumerable];
  },
  "DOMException message coerced": () => new DOMException(5, null),
  "DOMException constants": () => [DOMException.INDEX_SIZE_ERR, DOMException.DATA_CLONE_ERR, new DOMException().TIMEOUT_ERR, DOMException.VALIDATION_ERR],
  "DOMException codes": () => ["IndexSizeError", "HierarchyRequestError", "InvalidCharacterError", "SyntaxError", "NetworkError", "AbortError", "TimeoutError", "DataCloneError", "EncodingError", "NotAllowedError"].map((n) => new DOMException("", n).code),
  "DOMException toString": () => String(new DOMException("bad thing", "SyntaxError")),
  "DOMException without new": () => DOMException("x"),
  "DOMException is an Error": () => [new DOMException() instanceof Error, Object.getPrototypeOf(DOMException.prototype) === Error.prototype, typeof new DOMException().stack],
  "DOMException prototype getter": () => DOMException.prototype.name,
  "DOMException own keys": () => Object.keys(new DOMException("m", "AbortError")),
  // queueMicrotask
  "queueMicrotask not a function": () => queueMicrotask("x"),
  "queueMicrotask no argument": () => queueMicrotask(),
  "queueMicrotask returns": () => queueMicrotask(() => {}),
};

async function order() {
  const log = [];
  setTimeout(() => log.push("timeout"), 0);
  queueMicrotask(() => log.push("micro 1"));
  Promise.resolve().then(() => log.push("promise"));
  queueMicrotask(() => {
    log.push("micro 2");
    queueMicrotask(() => log.push("micro nested"));
  });
  log.push("sync");
  await new Promise((resolve) => setTimeout(resolve, 1));
  return log;
}

async function run() {
  const out = {};
  for (const [name, f] of Object.entries(cases)) out[name] = outcome(f);
  out["queueMicrotask order"] = { value: await order() };
  return out;
}
