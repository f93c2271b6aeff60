// The catalog chat (/catalog): one conversation with the directory at a time, by id (kept for this tab in
// sessionStorage, so a reload shows it again). Every text from the directory or the model is set as text
// (trace.el), never as HTML; a record's web address is a link only when it is http(s).
"use strict";

(() => {
  const KEY = "trace.catalog.conversation";
  const FIELDS = {
    city: "city", county: "county", zip: "postal code", languages: "languages", accessibility: "accessibility",
    taxonomy: "listed under", openings: "open", text: "the directory says",
  };
  const form = document.getElementById("chat-form");
  const input = document.getElementById("chat-input");
  const send = document.getElementById("chat-send");
  const log = document.getElementById("chat-log");
  const empty = document.getElementById("chat-empty");
  const status = document.getElementById("chat-status");
  const trailLine = document.getElementById("chat-trail");
  const el = trace.el;
  let conversation = null; // {id, trail}
  let noteLists = 0;

  function announce(text, isError = false) {
    status.textContent = ""; // a repeated message is announced again
    status.classList.toggle("error", isError);
    window.setTimeout(() => { status.textContent = text; }, 30);
  }

  function showTrail() {
    trailLine.replaceChildren();
    if (!conversation) return;
    trailLine.append("Trail of this conversation: ",
      el("a", { href: `/catalog/trails/${encodeURIComponent(conversation.id)}`, text: `run ${conversation.id}` }));
  }

  function reason(r) {
    const mark = r.holds === true ? "\u2713" : r.holds === false ? "\u2717" : "?";
    const said = r.holds === true ? "Meets" : r.holds === false ? "Does not meet" : "Not stated";
    const cls = r.holds === true ? "reason ok" : r.holds === false ? "reason bad" : "reason open";
    const item = el("li", { class: cls },
      el("span", { class: "mark", "aria-hidden": "true", text: mark }),
      el("span", { class: "visually-hidden", text: `${said}: ` }),
      el("strong", { text: r.label }));
    if (r.quote) {
      item.append(` \u2014 ${FIELDS[r.field] || r.field}: `, el("q", { class: "quote", dir: "auto", text: r.quote }));
    } else if (r.holds !== true) {
      item.append(` \u2014 ${r.reason || "not stated in the directory"}`);
    }
    return item;
  }

  function link(url) {
    if (/^https?:\/\//i.test(url)) return el("a", { href: url, rel: "noopener noreferrer", text: url });
    return el("span", { class: "quote", text: url });
  }

  function card(c) {
    const facts = el("dl", { class: "facts" });
    const fact = (term, ...value) => facts.append(el("dt", { text: term }), el("dd", {}, ...value));
    if (c.organization && c.organization.toLowerCase() !== c.name.toLowerCase()) fact("Organisation", c.organization);
    const phones = c.phones.length ? c.phones : null;  // how to reach it: phones first
    fact("Phone", ...(phones
      ? phones.flatMap((p, i) => [i ? ", " : null, el("a", { href: `tel:${p.replace(/[^0-9+]/g, "")}`, text: p }),
        (c.phone_labels || [])[i] ? ` (${c.phone_labels[i]})` : null])
      : ["not stated in the directory"]));
    fact("Address", c.address);
    fact("Hours", c.hours);
    if (c.season) fact("Season", c.season);
    (c.notices || []).forEach((n) => fact("Note", n));
    if (c.eligibility) fact("For", c.eligibility);
    if (c.url) fact("Web", link(c.url));
    if (c.verified) fact("Verified", el("span", { class: c.verified_stale ? "stale" : "", text: c.verified }));
    const article = el("article", { class: "card" }, el("h3", { dir: "auto", text: c.name }), facts);
    if (c.reasons.length) {
      article.append(el("p", { class: "why", text: "Why it fits" }),
        el("ul", { class: "reasons" }, ...c.reasons.map(reason)));
    }
    return article;
  }

  function assistantTurn(turn) {
    const body = el("div", { class: "said", dir: "auto" });
    if (turn.question) {
      body.append(el("p", { class: "question" }, el("strong", { text: "Question: " }), turn.question));
    } else if (turn.cards.length) {
      const open = new Set(turn.cards.flatMap((c) => c.open_conditions));
      body.append(el("p", { class: "summary", text:
        `${turn.cards.length} service${turn.cards.length === 1 ? "" : "s"} from the directory, best first.` }));
      if (open.size) {
        body.append(el("p", { class: "muted", text:
          `The directory does not state for every service: ${[...open].join(", ")}.` }));
      }
      body.append(el("div", { class: "cards" }, ...turn.cards.map(card)));
      body.append(el("details", { class: "reply" }, el("summary", { text: "The reply as text" }),
        el("p", { class: "wraps", dir: "auto", text: turn.reply })));
    } else {
      body.append(el("p", { class: "wraps", dir: "auto", text: turn.reply }));
    }
    if (turn.notes.length) {
      // labelled, so that a screen reader says what the list is (what the assistant or its model made of the request)
      const label = `notes-${++noteLists}`;
      body.append(
        el("p", { class: "notes-label", id: label, text: "Notes on how the request was read" }),
        el("ul", { class: "notes muted", "aria-labelledby": label }, ...turn.notes.map((n) => el("li", { text: n }))),
      );
    }
    if (turn.removed.length) {
      body.append(el("details", { class: "removed" },
        el("summary", { text: `Removed from the model's reply (${turn.removed.length})` }),
        el("ul", {}, ...turn.removed.map((r) => el("li", {}, `${r.kind} "${r.value}": `,
          el("span", { class: "quote", dir: "auto", text: r.sentence }))))));
    }
    return el("li", { class: `turn assistant outcome-${turn.outcome}` },
      el("p", { class: "who", text: "Directory" }), body);
  }

  function render(turn) {
    empty.hidden = true;
    log.append(el("li", { class: "turn user" }, el("p", { class: "who", text: "You" }),
      el("p", { class: "said wraps", text: turn.request })));
    const reply = assistantTurn(turn);
    log.append(reply);
    return reply;
  }

  function summary(turn) {
    if (turn.question) return `The directory asks: ${turn.question}`;
    if (turn.cards.length) {
      const n = turn.cards.length;
      return `${n} service${n === 1 ? "" : "s"} found. First: ${turn.cards[0].name}.`;
    }
    return turn.reply;
  }

  function reset() {
    conversation = null;
    sessionStorage.removeItem(KEY);
    log.replaceChildren();
    empty.hidden = false;
    showTrail();
  }

  async function ensure() {
    if (!conversation) {
      conversation = await trace.api("/api/catalog/conversations", { method: "POST", body: {} });
      sessionStorage.setItem(KEY, conversation.id);
      showTrail();
    }
    return conversation;
  }

  async function ask(text) {
    send.disabled = true;
    announce("Asking the directory\u2026");
    try {
      let current = await ensure();
      let turn;
      try {
        turn = await trace.api(`/api/catalog/conversations/${encodeURIComponent(current.id)}/turns`,
          { method: "POST", body: { text } });
      } catch (error) {
        if (error.status !== 404) throw error;
        reset(); // the server ended it (restarted, or it was idle longest): a new one, said so
        current = await ensure();
        turn = await trace.api(`/api/catalog/conversations/${encodeURIComponent(current.id)}/turns`,
          { method: "POST", body: { text } });
      }
      const shown = render(turn);
      input.value = "";
      shown.scrollIntoView({ block: "nearest" });
      announce(summary(turn));
    } catch (error) {
      announce(`Could not ask: ${error.message}`, true);
    } finally {
      send.disabled = false;
      input.focus();
    }
  }

  async function restore() {
    const id = sessionStorage.getItem(KEY);
    if (!id) return;
    try {
      conversation = await trace.api(`/api/catalog/conversations/${encodeURIComponent(id)}`);
      conversation.turns.forEach(render);
      showTrail();
    } catch (error) {
      reset(); // ended meanwhile: start afresh on the next request
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text) {
      announce("Type a request first.", true);
      input.focus();
      return;
    }
    ask(text);
  });
  document.getElementById("chat-new").addEventListener("click", () => {
    reset();
    announce("New conversation: nothing asked yet.");
    input.focus();
  });
  restore();
})();
