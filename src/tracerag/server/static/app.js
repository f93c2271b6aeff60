// TRACE: what every page shares. No inline scripts anywhere (the Content-Security-Policy forbids them): each page
// loads its own file from /static, and text from documents is only ever set with textContent, never as HTML.
"use strict";

const trace = {
  csrf() {
    const meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.content : "";
  },

  // JSON request to the API; resolves to the parsed body, rejects with an Error carrying the API's message.
  async api(path, options = {}) {
    const init = { method: options.method || "GET", headers: { Accept: "application/json" } };
    if (options.body !== undefined) {
      if (options.body instanceof FormData) {
        init.body = options.body;
        init.headers["X-CSRF-Token"] = trace.csrf();
      } else {
        init.body = JSON.stringify(options.body);
        init.headers["Content-Type"] = "application/json";
      }
    }
    const response = await fetch(path, init);
    const type = response.headers.get("content-type") || "";
    const body = type.includes("application/json") ? await response.json() : await response.text();
    if (!response.ok) {
      const error = new Error((body && body.error) || `HTTP ${response.status}`);
      error.status = response.status;
      error.body = body;
      throw error;
    }
    return body;
  },

  // `text` with every control and invisible format character (the bidi overrides and isolates among them) shown
  // as its escape ("\u202e"), as the server's pages and the terminal show it: the set is the server's own
  // (tracerag.text.hidden_ranges, in the page's hidden-characters meta), so there is one definition of it.
  shown(text) {
    if (trace._hidden === undefined) {
      const meta = document.querySelector('meta[name="hidden-characters"]');
      trace._hidden = meta ? new RegExp(`[${meta.content}]`, "gu") : null;
    }
    const value = String(text);
    if (!trace._hidden) return value;
    return value.replace(trace._hidden, (c) => {
      const code = c.codePointAt(0);
      if (code <= 0xff) return `\\x${code.toString(16).padStart(2, "0")}`;
      if (code <= 0xffff) return `\\u${code.toString(16).padStart(4, "0")}`;
      return `\\U${code.toString(16).padStart(8, "0")}`;
    });
  },

  // An element with children; text is always set as text, hidden characters shown (trace.shown).
  el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = trace.shown(value);
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(trace.shown(child)));
    }
    return node;
  },

  // `text` with the character ranges `spans` ([[start, end], ...], sorted or not) wrapped in <mark>, as nodes.
  highlighted(text, spans, tag = "mark") {
    const frag = document.createDocumentFragment();
    const ordered = [...spans].sort((a, b) => a[0] - b[0]);
    let at = 0;
    for (const [start, end] of ordered) {
      if (end <= at) continue;
      const from = Math.max(start, at);
      if (from > at) frag.append(document.createTextNode(trace.shown(text.slice(at, from))));
      const mark = document.createElement(tag);
      mark.textContent = trace.shown(text.slice(from, end));
      frag.append(mark);
      at = end;
    }
    if (at < text.length) frag.append(document.createTextNode(trace.shown(text.slice(at))));
    return frag;
  },

  // Follow a job's server-sent events; `onEvent(event)` for each, resolves with the end event.
  follow(jobId, onEvent) {
    return new Promise((resolve) => {
      const source = new EventSource(`/api/jobs/${encodeURIComponent(jobId)}/events`);
      const handle = (message) => {
        const event = JSON.parse(message.data);
        onEvent(event);
        if (event.kind === "end") {
          source.close();
          resolve(event);
        }
      };
      source.onmessage = handle; // the events are unnamed: their kind is in their data
    });
  },
};
window.trace = trace;
