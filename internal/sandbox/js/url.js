// url.js: URL and URLSearchParams, parsed by the host's WHATWG URL parser.
//
// A chunk of the sandbox's globals, compiled on its own and read into a VM
// only when a script first uses one of them (chunks.go): most runs use none,
// and every VM would pay for reading and running them. P is what
// bootstrap.js hands over: the primordials as they were before any agent
// code ran, and a few helpers.
(function url(P) {
  "use strict";
  const { H, StringC, SymbolIterator, SymbolToStringTag, TypeErrorC, apply, defineProperty, getOwnPropertyDescriptor, ownKeys, parse, stringSlice, stringify } = P;

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
  return { URL, URLSearchParams };
})
