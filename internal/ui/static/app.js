// codemode inspector: what needs JavaScript. The pages work without it,
// but for live updates. With a token, the tab keeps it in session storage
// and sends it as a bearer token with every request it makes: it fetches
// the pages itself and shows them in place.
"use strict";
(function () {
  const KEY = "codemode-ui-token";
  const prefix = () => document.body.dataset.prefix || "/ui";
  const token = () => sessionStorage.getItem(KEY);
  let live = null; // the current live-updates reader

  function headers() {
    const t = token();
    return t ? { Authorization: "Bearer " + t, "X-Codemode-UI": "1" } : {};
  }

  // show fetches url with the token and puts the page in place.
  async function show(url, push) {
    let res;
    try {
      res = await fetch(url, { headers: headers(), credentials: "same-origin" });
    } catch (e) {
      return;
    }
    if (res.status === 401) {
      sessionStorage.removeItem(KEY);
    }
    const html = await res.text();
    const doc = new DOMParser().parseFromString(html, "text/html");
    document.title = doc.title;
    document.body.replaceWith(document.adoptNode(doc.body));
    if (push) history.pushState({}, "", url);
    if (res.status === 401 && token() === null && push !== undefined) {
      const err = document.querySelector("form.login");
      if (err) err.insertAdjacentHTML("beforebegin", '<p class="error" role="alert">That token was not accepted.</p>');
    }
    init();
    const main = document.getElementById("main");
    if (main && push) main.focus();
  }

  function inPrefix(url) {
    return url.origin === location.origin && (url.pathname === prefix() || url.pathname.startsWith(prefix() + "/")) &&
      !url.pathname.startsWith(prefix() + "/static/");
  }

  document.addEventListener("click", (ev) => {
    if (!token() || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    const a = ev.target.closest("a[href]");
    if (!a || a.target) return;
    const url = new URL(a.href, location.href);
    if (!inPrefix(url)) return;
    ev.preventDefault();
    show(url.href, true);
  });

  document.addEventListener("submit", (ev) => {
    const form = ev.target;
    if (form.matches("form.login")) {
      // Keep the token for this tab, and show the page it was asked for.
      ev.preventDefault();
      const t = form.querySelector("[name=token]").value;
      const next = form.querySelector("[name=next]").value || prefix() + "/";
      sessionStorage.setItem(KEY, t);
      show(next, true);
      return;
    }
    if (!token() || (form.method || "get").toLowerCase() !== "get") return;
    const url = new URL(form.action, location.href);
    if (!inPrefix(url)) return;
    ev.preventDefault();
    const q = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (v !== "") q.append(k, v);
    url.search = q.toString();
    show(url.href, true);
  });

  window.addEventListener("popstate", () => {
    if (token()) show(location.href);
  });

  // Live updates of the run list: server-sent events, each a rendered row.
  function startLive() {
    if (live) live.stop();
    live = null;
    const table = document.getElementById("runs");
    if (!table || !table.dataset.live) return;
    const status = document.getElementById("live-status");
    const tbody = table.tBodies[0];
    const first = tbody.querySelector("tr[data-run]");
    let url = table.dataset.live;
    url += (url.includes("?") ? "&" : "?") + "shown=" + encodeURIComponent(first ? first.dataset.run : "");
    let added = 0;
    const add = (html) => {
      const t = document.createElement("template");
      t.innerHTML = "<table><tbody>" + html + "</tbody></table>";
      const row = t.content.querySelector("tr");
      if (!row || tbody.querySelector('tr[data-run="' + CSS.escape(row.dataset.run) + '"]')) return;
      const empty = tbody.querySelector("tr.empty");
      if (empty) empty.remove();
      row.classList.add("fresh");
      tbody.insertBefore(row, tbody.firstChild);
      added++;
      if (status) status.textContent = added === 1 ? "1 new run." : added + " new runs.";
    };
    if (status) status.textContent = "Live: new runs appear as they are recorded.";
    live = token() ? fetchEvents(url, add) : sourceEvents(url, add);
  }

  function sourceEvents(url, add) {
    const es = new EventSource(url);
    es.addEventListener("run", (e) => add(e.data));
    return { stop: () => es.close() };
  }

  // fetchEvents reads the event stream with fetch, which can send the
  // token (EventSource cannot).
  function fetchEvents(url, add) {
    const ctl = new AbortController();
    (async () => {
      for (;;) {
        try {
          const res = await fetch(url, { headers: headers(), signal: ctl.signal });
          if (!res.ok || !res.body) return;
          const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
          let buf = "";
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buf += value;
            let i;
            while ((i = buf.indexOf("\n\n")) >= 0) {
              const block = buf.slice(0, i);
              buf = buf.slice(i + 2);
              let event = "message";
              const data = [];
              for (const line of block.split("\n")) {
                if (line.startsWith("event:")) event = line.slice(6).trim();
                else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
              }
              if (event === "run") add(data.join("\n"));
            }
          }
        } catch (e) {
          if (ctl.signal.aborted) return;
        }
        await new Promise((r) => setTimeout(r, 2000));
      }
    })();
    return { stop: () => ctl.abort() };
  }

  function init() {
    // A page that asks for the token, in a tab that has one: show the
    // page it was asked for, with the token.
    if (document.querySelector("form.login") && token()) {
      const next = document.querySelector("form.login [name=next]").value;
      show(next || location.href);
      return;
    }
    startLive();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
