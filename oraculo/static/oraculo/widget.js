/* Oraculo help widget, no dependencies. <script src="https://HOST/static/oraculo/widget.js" data-key="wk_..."
 * data-app="guide" defer></script>; optional data-api (server URL; default: this script's origin),
 * data-source-type, data-lang, data-timeout (seconds without a byte from the server before giving up; 60).
 * Server text goes in as text (textContent); the server's rendered HTML is rebuilt node by node from an inert
 * parsed document, allow-listed tags and http(s)/mailto links only. */
(function () {
  "use strict";
  var d = document, w = window;
  if (w.__oraculoWidget) return;
  var script = d.currentScript || d.querySelector("script[data-key][src*='widget.js']");
  if (!script || !script.src) return;
  w.__oraculoWidget = true;

  var P = "orw-", H = { "aria-hidden": "true" }, data = function (n) { return script.getAttribute("data-" + n) || ""; };
  var api = (data("api") || new URL(script.src, location.href).origin).replace(/\/+$/, "");
  if (!/\/api\/v\d+$/.test(api)) api += "/api/v1";

  var lang = (data("lang") || d.documentElement.lang || "").toLowerCase().slice(0, 2) === "es" ? "es" : "en";
  var T = {
    en: {
      help: "Help", title: "Ask the docs", close: "Close help", label: "Your question",
      placeholder: "Type your question and press Enter", ask: "Ask", loading: "Looking for an answer\u2026",
      sources: "Sources", extractive: "Most relevant passages from the documentation:",
      noSources: "No source found for this question.", helpful: "Was this helpful?", yes: "Yes",
      no: "No", yesLabel: "Yes, this was helpful", noLabel: "No, this was not helpful",
      thanks: "Thanks for your feedback!", empty: "Type a question first.",
      network: "Could not reach the help service. Check your connection and try again.",
      rate: "Too many questions, try again in {n} s.", rateNoWait: "Too many questions, try again shortly.",
      failed: "Something went wrong ({s}). Try again later.", ref: "Source {n}", passage: "Show passage",
      follows: "Following up on \u201c{q}\u201d.", restart: "New question",
      unavailable: "Help is not available on this page right now.",
      invalid: "This question could not be sent. Shorten or rephrase it and try again."
    },
    es: {
      help: "Ayuda", title: "Pregunta a la documentaci\u00f3n", close: "Cerrar ayuda", label: "Tu pregunta",
      placeholder: "Escribe tu pregunta y pulsa Intro", ask: "Preguntar", loading: "Buscando una respuesta\u2026",
      sources: "Fuentes", extractive: "Fragmentos m\u00e1s relevantes de la documentaci\u00f3n:",
      noSources: "No se encontr\u00f3 ninguna fuente para esta pregunta.", helpful: "\u00bfTe ha sido \u00fatil?",
      yes: "S\u00ed", no: "No", yesLabel: "S\u00ed, me ha sido \u00fatil", noLabel: "No, no me ha sido \u00fatil",
      thanks: "\u00a1Gracias por tu opini\u00f3n!", empty: "Escribe primero una pregunta.",
      network: "No se pudo conectar con el servicio de ayuda. Comprueba tu conexi\u00f3n e int\u00e9ntalo de nuevo.",
      rate: "Demasiadas preguntas, int\u00e9ntalo de nuevo en {n} s.",
      rateNoWait: "Demasiadas preguntas, int\u00e9ntalo de nuevo en un momento.",
      failed: "Algo ha fallado ({s}). Int\u00e9ntalo m\u00e1s tarde.", ref: "Fuente {n}",
      passage: "Ver fragmento", follows: "Sobre \u201c{q}\u201d.", restart: "Nueva pregunta",
      unavailable: "La ayuda no est\u00e1 disponible en esta p\u00e1gina en este momento.",
      invalid: "No se pudo enviar la pregunta. Ac\u00f3rtala o reform\u00falala e int\u00e9ntalo de nuevo."
    }
  }[lang];

  function el(tag, cls, attrs, text) {
    var e = d.createElement(tag);
    if (tag === "button") e.type = "button";
    if (cls) e.className = cls.replace(/(^|\s)(?=\S)/g, "$1" + P);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    return e;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) parent.appendChild(arguments[i]);
    return parent;
  }

  /* Styles: widget.css next to this script; the widget stays hidden until they load (or fail). */
  var css = new URL("widget.css", script.src).href, root = el("div", "root", { id: P + "root", lang: lang });
  root.hidden = true;
  var link = el("link", "", { rel: "stylesheet", href: css });
  link.onload = link.onerror = function () { root.hidden = false; };
  setTimeout(link.onload, 3000);
  d.head.appendChild(link);

  var id = function (n) { return P + n; };
  var button = el("button", "toggle", { "aria-expanded": "false", "aria-controls": id("panel"), "aria-haspopup": "dialog" });
  add(button, el("span", "toggle-icon", H, "?"), el("span", "toggle-label", null, T.help));

  var panel = el("div", "panel", { id: id("panel"), role: "dialog", "aria-modal": "false", "aria-labelledby": id("title") });
  panel.hidden = true;
  var closeBtn = el("button", "close", { "aria-label": T.close, title: T.close }, "\u00d7");
  var form = el("form", "form", { novalidate: "" });
  var input = el("textarea", "input", { id: id("q"), rows: "2", maxlength: "2000", placeholder: T.placeholder });
  var submit = el("button", "submit", { type: "submit" }, T.ask);
  add(form, el("label", "label", { "for": id("q") }, T.label), input, submit);
  var region = el("div", "answer", { id: id("answer"), "aria-live": "polite" });
  add(panel, add(el("div", "head"), el("h2", "title", { id: id("title") }, T.title), closeBtn), form, region);
  add(root, button, panel);

  function mount() { d.body.appendChild(root); }
  if (d.body) mount(); else d.addEventListener("DOMContentLoaded", mount);

  function setOpen(open, returnFocus) {
    panel.hidden = !open;
    button.setAttribute("aria-expanded", String(open));
    if (open) input.focus();
    else if (returnFocus) button.focus();
  }
  button.addEventListener("click", function () { setOpen(panel.hidden); });
  closeBtn.addEventListener("click", function () { setOpen(false, true); });
  root.addEventListener("keydown", function (e) {
    if (e.key === "Escape" && !panel.hidden) { e.stopPropagation(); setOpen(false, true); }
  });
  input.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); ask(); }
  });
  form.addEventListener("submit", function (e) { e.preventDefault(); ask(); });

  function status(text, cls) {
    region.textContent = "";
    region.appendChild(el("p", cls || "status", null, text));
  }

  /* No cookies: the API authenticates with the widget key only. Gives up, like a network error, after
   * data-timeout seconds without a byte: a stream that keeps writing is never cut, however long it runs. */
  var timeout = (parseFloat(data("timeout")) || 60) * 1000;
  function send(path, body, accept) {
    var ctl = w.AbortController && new AbortController(), timer = null;
    function wait() { clearTimeout(timer); timer = setTimeout(function () { ctl && ctl.abort(); }, timeout); }
    wait();
    var headers = { "Content-Type": "application/json", "X-Widget-Key": data("key") };
    if (accept) headers.Accept = accept;
    return fetch(api + path, {
      method: "POST", credentials: "omit", signal: ctl && ctl.signal, body: JSON.stringify(body), headers: headers
    }).then(function (r) { r.done = function () { clearTimeout(timer); }; r.alive = wait; return r; });
  }
  function settle(r) {
    r.done();
    return r.text().then(function (t) {
      var j = null;
      try { j = t ? JSON.parse(t) : null; } catch (err) { /* not JSON: keep null */ }
      return { ok: r.ok, status: r.status, json: j, retry: r.headers.get("Retry-After") };
    });
  }
  function post(path, body) { return send(path, body).then(settle); }

  /* /ask as server-sent events: `delta` text is shown as it arrives, `done` is the whole answer. Resolves like
   * post(), or with {again: true} when it cannot stream (an older server, a stream cut before `done`): the
   * caller then asks once more, plainly. A network error is one, as with post(). */
  var canStream = !!(w.ReadableStream && w.TextDecoder && w.Response && "body" in Response.prototype);
  function stream(body) {
    return send("/ask", body, "text/event-stream").then(function (r) {
      if (r.status === 406) { r.done(); return { again: true }; }
      if (!r.ok || !r.body || !/^text\/event-stream/.test(r.headers.get("Content-Type") || "")) return settle(r);
      var reader = r.body.getReader(), dec = new TextDecoder(), buf = "", out = null, shown = null;
      function event(block) {
        var name = "", raw = "";
        block.split("\n").forEach(function (line) {
          var m = /^(event|data): ?(.*)$/.exec(line);
          if (m && m[1] === "event") name = m[2]; else if (m) raw += m[2];
        });
        var j = null;
        try { j = JSON.parse(raw); } catch (err) { return; }
        if (name === "delta" && j && typeof j.text === "string") {
          if (!shown) {
            region.textContent = "";
            region.setAttribute("aria-busy", "true");
            shown = region.appendChild(el("div", "text plain streaming"));
          }
          shown.appendChild(d.createTextNode(j.text));
        } else if (name === "done") out = { ok: true, status: 200, json: j };
        else if (name === "error") out = { ok: false, status: 503, json: j };
      }
      function pump() {
        return reader.read().then(function (c) {
          if (!c.done) {
            r.alive();
            var parts = (buf += dec.decode(c.value, { stream: true })).split("\n\n");
            buf = parts.pop();
            parts.forEach(event);
            if (!out) return pump();
            reader.cancel()["catch"](function () { /* already closed */ });
          }
          r.done();
          return out || { again: true };
        });
      }
      /* A stream cut before `done` (a proxy, a dropped connection): the plain request, once. */
      return pump()["catch"](function () { return { again: true }; }).then(function (res) {
        region.removeAttribute("aria-busy");
        return res;
      });
    });
  }

  /* An error response's text, in the page's language: the server's own messages are in English and written for
   * whoever installs the widget (a revoked key, an origin not allowed), so they go to the console only. */
  function errorText(res) {
    var j = res.json;
    if (res.status === 429) {
      var n = parseInt(res.retry, 10);
      if (isNaN(n) && j && typeof j.detail === "string") n = parseInt((j.detail.match(/(\d+)\s*s/) || [])[1], 10);
      return isNaN(n) ? T.rateNoWait : T.rate.replace("{n}", n);
    }
    if (j && w.console) w.console.warn("Oraculo help widget: HTTP " + res.status, j);
    if (res.status === 401 || res.status === 403) return T.unavailable;
    if (res.status === 400 || res.status === 413) return T.invalid;
    return T.failed.replace("{s}", res.status);
  }

  /* The conversation of this page visit: a question follows up the last answer until "New question". Only the
   * asker holds an answer's feedback token, so only it can continue the thread. */
  var busy = false, thread = null;
  function answer(body) {
    return canStream ? stream(body).then(function (res) { return res.again ? post("/ask", body) : res; })
      : post("/ask", body);
  }
  function ask() {
    var q = input.value.trim();
    if (busy) return;
    if (!q) { status(T.empty, "error"); input.focus(); return; }
    /* aria-disabled, not disabled: a disabled button would drop the focus of whoever just clicked it. */
    busy = true;
    submit.setAttribute("aria-disabled", "true");
    status(T.loading, "status loading");
    var body = { question: q, page_url: location.href };
    if (data("app")) body.app = data("app");
    if (data("source-type")) body.source_type = data("source-type");
    var follows = thread && thread.q;
    if (thread) { body.previous_query_id = thread.id; body.previous_feedback_token = thread.token; }
    answer(body).then(function (res) {
      if (res.status !== 404 || !follows) return res;
      /* The previous answer is gone (purged, say): ask afresh. */
      thread = follows = null;
      delete body.previous_query_id;
      delete body.previous_feedback_token;
      return answer(body);
    }).then(function (res) {
      var a = res.json;
      if (res.ok && a && typeof a.answer === "string") {
        thread = a.query_id && a.feedback_token ? { id: a.query_id, token: String(a.feedback_token), q: q } : null;
        render(a, follows);
      } else status(errorText(res), "error");
    }, function () { status(T.network, "error"); }).then(function () {
      busy = false;
      submit.removeAttribute("aria-disabled");
    });
  }

  function safeUrl(u) {
    try {
      var url = new URL(u, api);
      return url.protocol === "https:" || url.protocol === "http:" ? url.href : "";
    } catch (e) { return ""; }
  }

  /* The server sends sanitised HTML; it is still parsed into an inert document (no scripts run, nothing
   * loads) and rebuilt here, keeping only these tags and links to http(s)/mailto, so the page never trusts
   * markup it did not make itself. */
  var TAGS = /^(P|BR|HR|STRONG|EM|DEL|S|CODE|PRE|BLOCKQUOTE|UL|OL|LI|A|H[1-6]|TABLE|THEAD|TBODY|TR|TH|TD)$/;
  function html(source, cites) {
    var doc = new DOMParser().parseFromString(String(source || ""), "text/html"), out = d.createDocumentFragment();
    (function copy(from, to, inert) {
      [].forEach.call(from.childNodes, function (n) {
        if (n.nodeType === 3) return to.appendChild(inert ? d.createTextNode(n.data) : citeText(n.data, cites));
        if (n.nodeType !== 1 || /^(SCRIPT|STYLE|TEMPLATE)$/.test(n.tagName)) return;
        if (!TAGS.test(n.tagName)) return copy(n, to, inert);
        var href = n.tagName === "A" && n.getAttribute("href"), link = href && /^(https?|mailto):/i.test(href);
        /* A link the page cannot follow (an anchor in the docs) is its text, not a dead link. */
        var e = d.createElement(n.tagName === "A" && !link ? "SPAN" : n.tagName);
        if (link) { e.href = href; e.target = "_blank"; e.rel = "noopener nofollow noreferrer"; }
        if (n.tagName === "OL" && n.getAttribute("start")) e.start = parseInt(n.getAttribute("start"), 10) || 1;
        if (n.tagName === "TABLE") { var wrap = el("div", "table"); to.appendChild(wrap).appendChild(e); }
        else to.appendChild(e);
        copy(n, e, inert || /^(A|CODE|PRE)$/.test(n.tagName));
      });
    })(doc.body, out, false);
    return out;
  }

  /* "[n]" in text becomes a link to the n-th source; anything else stays text. */
  function citeText(text, cites) {
    var f = d.createDocumentFragment();
    text.split(/(\[\d+\])/).forEach(function (part) {
      var m = /^\[(\d+)\]$/.exec(part), n = m && +m[1];
      if (n && cites && n <= cites.n) {
        var ref = el("a", "ref", { href: "#" + id("src-" + cites.q + "-" + n), "aria-label": T.ref.replace("{n}", n) }, "[" + n + "]");
        ref.addEventListener("click", function (e) {
          e.preventDefault();
          var target = d.getElementById(id("src-" + cites.q + "-" + n));
          if (target) { target.focus(); target.scrollIntoView({ block: "nearest" }); }
        });
        f.appendChild(ref);
      } else if (part) f.appendChild(d.createTextNode(part));
    });
    return f;
  }

  function render(a, follows) {
    region.textContent = "";
    /* The next question follows this answer up; "New question" (shown from the first answer on) starts afresh. */
    if (thread) {
      var again = el("button", "restart", null, T.restart);
      var note = follows ? el("p", "thread", null, T.follows.replace("{q}", follows)) : el("p", "thread-bar");
      again.addEventListener("click", function () {
        thread = null;
        note.parentNode && note.parentNode.removeChild(note);
        input.value = "";
        input.focus();
      });
      region.appendChild(follows ? add(note, d.createTextNode(" "), again) : add(note, again));
    }
    var sources = Array.isArray(a.sources) ? a.sources : [];
    var qid = String(a.query_id == null ? "" : a.query_id), cites = { q: qid, n: sources.length };
    if (a.answer_mode === "extractive") region.appendChild(el("p", "mode", null, T.extractive));
    var text = el("div", "text");
    /* Rendered HTML when the server sends it; the plain answer (as text) from an older server. */
    if (typeof a.answer_html === "string" && a.answer_html) text.appendChild(html(a.answer_html, cites));
    else { text.className += " " + P + "plain"; text.appendChild(citeText(String(a.answer), cites)); }
    region.appendChild(text);

    if (sources.length) {
      var list = el("ol", "sources");
      sources.forEach(function (s, i) {
        var li = el("li", "source", { id: id("src-" + qid + "-" + (i + 1)), tabindex: "-1" });
        var href = s && s.url ? safeUrl(s.url) : "";
        var title = (s && s.title) || "\u2014";
        add(li, href ? el("a", "source-title", { href: href, target: "_blank", rel: "noopener noreferrer" }, title)
                     : el("span", "source-title", null, title));
        /* Headings may come as markdown ("## Billing"): shown without the marks, and without the title. */
        var path = (s && Array.isArray(s.heading_path) ? s.heading_path : []).map(function (h) {
          return String(h).replace(/^#+\s*/, "");
        }).filter(function (h) { return h && h !== title; });
        if (path.length) li.appendChild(el("span", "source-path", null, path.join(" \u203a ")));
        if (s && typeof s.html === "string" && s.html) {
          var more = el("details", "passage"), sum = el("summary", "", null, T.passage);
          add(li, add(more, sum, add(el("div", "passage-text"), html(s.html))));
        }
        list.appendChild(li);
      });
      add(region, el("h3", "sources-h", null, T.sources), list);
    } else region.appendChild(el("p", "status", null, T.noSources));
    if (qid && a.feedback_token) region.appendChild(feedback(qid, String(a.feedback_token)));
  }

  /* Thumb icon (Feather, MIT), drawn so it needs no emoji font; CSS turns it down for "No". */
  function thumb() {
    var ns = "http://www.w3.org/2000/svg", svg = d.createElementNS(ns, "svg"), path = d.createElementNS(ns, "path");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("aria-hidden", "true");
    path.setAttribute("d", "M14 9V5a3 3 0 0 0-3-3l-4 9v11h11.3a2 2 0 0 0 2-1.7l1.4-9a2 2 0 0 0-2-2.3zM7 22H4a2 2 0 0 1-2-2v-7a2 2 0 0 1 2-2h3");
    svg.appendChild(path);
    return svg;
  }

  function feedback(qid, token) {
    var msg = el("p", "feedback-msg", { role: "status" });
    var btns = [true, false].map(function (helpful) {
      var b = el("button", "thumb", { "aria-label": helpful ? T.yesLabel : T.noLabel, "aria-pressed": "false" });
      add(b, thumb(), el("span", "", H, helpful ? T.yes : T.no));
      /* aria-disabled, not disabled: a disabled button would drop the focus of whoever just pressed it. */
      function set(sent, cls, text) {
        btns.forEach(function (x) {
          if (sent) x.setAttribute("aria-disabled", "true"); else x.removeAttribute("aria-disabled");
        });
        b.setAttribute("aria-pressed", String(sent));
        msg.className = P + "feedback-msg " + P + cls;
        msg.textContent = text;
      }
      b.addEventListener("click", function () {
        if (b.getAttribute("aria-disabled") === "true") return;
        set(true, "sending", "");
        post("/queries/" + encodeURIComponent(qid) + "/feedback", { helpful: helpful, feedback_token: token }).then(function (res) {
          if (res.ok || res.status === 409) set(true, "thanks", T.thanks);
          else set(false, "error", errorText(res));
        }, function () { set(false, "error", T.network); });
      });
      return b;
    });
    return add.apply(null, [el("div", "feedback", { role: "group", "aria-label": T.helpful }),
      el("span", "feedback-q", null, T.helpful)].concat(btns, msg));
  }
})();
