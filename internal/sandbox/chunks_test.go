package sandbox

import (
	"context"
	"testing"
)

// The globals made on first use from chunks (chunks.go) work as if they had
// been made with the bootstrap: the built-ins they were handed were
// captured before agent code ran, so polluting Object.prototype with every
// name the chunks take, or replacing the built-ins they use, before their
// first use changes nothing; and the loader itself is out of reach.
func TestChunksTakeTheBuiltInsAsTheyWere(t *testing.T) {
	res := runJS(t, context.Background(), `const names = ["g", "H", "ObjectC", "StringC", "apply", "defineProperty", "parse", "stringify", "Uint8ArrayC", "charCodeAt", "fromCharCode", "isA", "hostClasses"];
for (const n of names) Object.defineProperty(Object.prototype, n, { get() { throw new Error("read " + n); }, configurable: true });
String.prototype.charCodeAt = () => { throw new Error("charCodeAt"); };
String.fromCharCode = () => { throw new Error("fromCharCode"); };
JSON.parse = () => { throw new Error("parse"); };
JSON.stringify = () => { throw new Error("stringify"); };
Function.prototype.apply = () => { throw new Error("apply"); };
const bytes = new TextEncoder().encode("é€");
const text = new TextDecoder().decode(bytes);
const u = new URL("https://a.example/p?q=1#f");
u.searchParams.append("r", "2");
const clone = structuredClone({ a: [1, { b: 2 }] });
let refused = "";
try { structuredClone(u); } catch (e) { refused = e.name; }
globalThis.__codemode_result__ = { n: bytes.length, text, href: u.href, clone, refused, b64: btoa("hi"), loader: typeof __cm_chunk };`, nil)
	wantResult(t, res, `{"n":5,"text":"é€","href":"https://a.example/p?q=1&r=2#f","clone":{"a":[1,{"b":2}]},"refused":"DataCloneError","b64":"aGk=","loader":"undefined"}`)
}

// A chunk is read into a VM once, whichever of its globals comes first:
// TextDecoder made after TextEncoder is of the same chunk (instanceof and
// structuredClone's refusal of host objects see one class).
func TestChunkOncePerVM(t *testing.T) {
	res := runJS(t, context.Background(), `const E = TextEncoder;
const sameURL = URL === URL && URLSearchParams === new URL("https://a.example").searchParams.constructor;
let refused = "";
try { structuredClone(new TextDecoder()); } catch (e) { refused = e.message; }
globalThis.__codemode_result__ = { sameURL, refused: refused.includes("TextDecoder"), again: TextEncoder === E };`, nil)
	wantResult(t, res, `{"sameURL":true,"refused":true,"again":true}`)
}
