// The review board: accept / reject / skip each candidate by click or key (a, r, s; j / k next and previous; u
// undo), each decision sent to the API at once; the focused card is announced in the status line (aria-live).
// Keys typed into the note field are the note's, never shortcuts. Text from documents and models is only ever set
// with textContent (trace.el), never as HTML.
"use strict";

(() => {
  const board = document.getElementById("board");
  if (!board) return;
  const cards = [...board.querySelectorAll(".card")];
  const status = document.getElementById("status");
  const base = `/api/collections/${encodeURIComponent(board.dataset.collection)}/selections/` +
    encodeURIComponent(board.dataset.selection);
  // the review session (a `review` run) is this tab's: its undo takes back this tab's decisions, as at a terminal
  const sessionKey = `tracerag-review:${board.dataset.collection}:${board.dataset.selectionId}:${board.dataset.run}`;
  let reviewRun = sessionStorage.getItem(sessionKey);
  let current = -1;
  const LABEL = { accept: "accepted", reject: "rejected", undecided: "undecided" };
  const KEYS = { a: "accept", r: "reject", s: "undecided" };

  const say = (text) => { status.textContent = text; };
  const titleOf = (card) => card.querySelector(".card-title").textContent.replace(/\s+/g, " ").trim();
  const stateOf = (card) => LABEL[card.dataset.decision] || "no decision yet";

  function focusCard(index, prefix = "") {
    if (!cards.length) return;
    current = Math.max(0, Math.min(cards.length - 1, index));
    cards.forEach((card, i) => card.classList.toggle("current", i === current));
    const card = cards[current];
    card.focus({ preventScroll: true });
    card.scrollIntoView({ block: "nearest" });
    say(`${prefix}Candidate ${current + 1} of ${cards.length}: ${titleOf(card)}, ${stateOf(card)}.`);
  }

  function showDecision(card, entry) {
    card.dataset.decision = entry ? entry.decision : "";
    card.querySelector('[data-role="decision"]').textContent = entry ? LABEL[entry.decision] : "none yet";
    // after an undo the note is the restored decision's (none: no note), not the one taken back
    card.querySelector(".note").value = entry ? entry.note : "";
  }

  function showCounts(counts) {
    for (const [key, value] of Object.entries(counts)) {
      const node = board.querySelector(`[data-count="${key}"]`);
      if (node) node.textContent = String(value);
    }
  }

  function sessionBody(extra) {
    return {
      ...extra,
      run: board.dataset.run || null,
      judge: board.dataset.judge || null,
      review_run: reviewRun,
    };
  }

  async function decide(index, decision) {
    const card = cards[index];
    if (!card) return;
    const body = sessionBody({ doc_id: card.dataset.doc, decision, note: card.querySelector(".note").value });
    try {
      const answer = await trace.api(`${base}/decisions`, { method: "POST", body });
      reviewRun = answer.review_run;
      sessionStorage.setItem(sessionKey, reviewRun);
      showDecision(card, answer.entry);
      showCounts(answer.counts);
      const done = `${titleOf(card)}: ${LABEL[decision]}. `;
      if (index + 1 < cards.length) focusCard(index + 1, done);
      else { focusCard(index, done); say(`${done}That was the last candidate.`); }
    } catch (error) {
      say(`Not saved: ${error.message}`);
    }
  }

  async function undo() {
    try {
      const answer = await trace.api(`${base}/undo`, { method: "POST", body: { review_run: reviewRun } });
      showCounts(answer.counts);
      const index = cards.findIndex((card) => card.dataset.doc === answer.doc_id);
      if (!answer.undone || index < 0) { say(answer.message); return; }
      showDecision(cards[index], answer.entry);
      focusCard(index, `${answer.message}. `);
    } catch (error) {
      say(`Not undone: ${error.message}`);
    }
  }

  const typing = (target) =>
    target instanceof HTMLElement &&
    (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    const key = event.key.toLowerCase();
    if (key === "j") focusCard(current + 1);
    else if (key === "k") focusCard(current < 0 ? 0 : current - 1);
    else if (key === "u") undo();
    else if (KEYS[key]) {
      if (current < 0) { focusCard(0); return; }
      decide(current, KEYS[key]);
    } else return;
    event.preventDefault();
  });

  cards.forEach((card, index) => {
    card.addEventListener("focusin", () => {
      if (current === index) return;
      current = index;
      cards.forEach((c, i) => c.classList.toggle("current", i === index));
    });
    for (const button of card.querySelectorAll("button[data-action]")) {
      button.addEventListener("click", () => decide(index, button.dataset.action));
    }
    card.querySelector(".note").addEventListener("keydown", (event) => {
      if (event.key === "Enter") { event.preventDefault(); decide(index, card.dataset.decision || "undecided"); }
      if (event.key === "Escape") card.focus();
    });
  });

  // -- the criteria judge over this run's candidates: a job, followed to its end, then the board with its scores

  const judgeForm = document.getElementById("judge-form");
  if (judgeForm) {
    const progress = document.getElementById("judge-progress");
    // the criteria typed survive the reload that shows the judge's scores (this tab's, per collection)
    const criteriaKey = `tracerag-criteria:${board.dataset.collection}`;
    const kept = JSON.parse(sessionStorage.getItem(criteriaKey) || "null");
    if (kept && !judgeForm.elements.criteria.value) {
      judgeForm.elements.criteria.value = kept.criteria;
      judgeForm.elements.criteria_format.value = kept.format;
    }
    judgeForm.addEventListener("submit", async (event) => {
      event.preventDefault();
      const button = document.getElementById("judge-button");
      button.disabled = true;
      const body = {
        from_run: board.dataset.run,
        criteria: judgeForm.elements.criteria.value,
        criteria_format: judgeForm.elements.criteria_format.value,
        k: Number(judgeForm.elements.k.value) || null,
      };
      sessionStorage.setItem(criteriaKey, JSON.stringify({ criteria: body.criteria, format: body.criteria_format }));
      try {
        const job = await trace.api(`/api/collections/${encodeURIComponent(board.dataset.collection)}/judge`,
          { method: "POST", body });
        progress.textContent = "Judging…";
        const end = await trace.follow(job.id, (e) => {
          if (e.kind !== "judged") return;
          const rate = e.per_minute ? ` (${e.per_minute} a minute)` : "";
          const what = e.failure ? `failed: ${e.failure}` : `score ${e.score}`;
          progress.textContent = trace.shown(`${e.done} of ${e.total} judged${rate}; ${e.doc_id}: ${what}`);
        });
        if (end.status !== "done") { progress.textContent = `The judge failed: ${end.error}`; return; }
        const done = await trace.api(`/api/jobs/${encodeURIComponent(job.id)}`);
        const url = new URL(window.location.href);
        url.searchParams.set("run", board.dataset.run);
        url.searchParams.set("judge", done.result.run_id);
        window.location.assign(url.toString());
      } catch (error) {
        progress.textContent = `Not judged: ${error.message}`;
      } finally {
        button.disabled = false;
      }
    });
  }

  // -- the cited draft from the accepted sources --------------------------------------------------------------

  const draftSection = document.getElementById("draft");
  const draftBody = document.getElementById("draft-body");
  const draftButton = document.getElementById("draft-button");
  const el = trace.el;

  const squeeze = (text) => text.replace(/\s+/g, " ").trim();

  function citation(c, sentence) {
    const where = c.span ? `${c.doc_id}:${c.span[0]}-${c.span[1]}` : "not located";
    // a quotation's quote is its sentence: said once
    const text = squeeze(c.quote) === squeeze(sentence) ? `[${c.label} ${where}]` : `[${c.label} ${where}] “${c.quote}”`;
    const item = el("li", { class: "citation" }, c.document_url ? el("a", { href: c.document_url, text }) : text);
    if (c.check) { // what the check found and why, in the words `tracerag answer --explain` prints
      const how = c.check.method ? ` (${c.check.method})` : "";
      const finding = el("span", { class: `outcome outcome-${c.check.outcome.replace(/ /g, "-")}` },
        c.check.flagged ? el("strong", { class: "flag", text: "FLAGGED: " }) : "",
        el("strong", { text: c.check.outcome }), `${how}: ${c.check.reason}`);
      item.append(" ", finding);
    }
    return item;
  }

  // the sentence's support verdict: spelt out (never colour alone), with why
  const verdict = (s) => el("p", { class: `support support-${s.verdict.replace(/ /g, "-")}` },
    "verdict: ", el("strong", { text: s.verdict }), ` (${s.verdict_reason})`);

  function showDraft(draft) {
    draftBody.replaceChildren();
    draftBody.append(el("p", { class: "draft-label", text: draft.label }));
    if (draft.abstained) {
      draftBody.append(el("p", { class: "abstention" }, el("strong", { text: "Abstained: " }), draft.abstention));
      if (draft.failure) draftBody.append(el("p", { class: "error", text: draft.failure }));
    }
    if (draft.withdrawn) { // no answer: what was written is shown below, flagged, for the record
      draftBody.append(el("p", { class: "abstention withdrawn" }, el("strong", { text: "No answer, withdrawn: " }),
        draft.withdrawn, ". The withdrawn draft, as written:"));
    }
    for (const s of draft.sentences) {
      const block = el("div", { class: `sentence kind-${s.kind}` },
        el("p", {}, el("span", { class: "kind", text: `[${s.kind}]` }), " ", s.text));
      const list = el("ul", { class: "citations" });
      s.citations.forEach((c) => list.append(citation(c, s.text)));
      s.flags.forEach((f) => list.append(el("li", {}, el("strong", { class: "flag", text: "FLAGGED:" }), ` ${f}`)));
      block.append(list, verdict(s));
      draftBody.append(block);
    }
    if (draft.sentences.length) { // the totals, as the CLI's last --explain line
      const n = draft.sentences.length;
      const counts = Object.entries(draft.verdicts).map(([v, k]) => `${k} ${v}`).join(" · ");
      draftBody.append(el("p", { class: "support-totals" },
        el("strong", { text: `${n} sentence${n === 1 ? "" : "s"}: ${counts}` })));
    }
    if (draft.sources.length) { // what S1, S2... stand for: the accepted sources as the drafter saw them
      const sources = el("ol", { class: "draft-sources", "aria-label": "Sources" });
      for (const src of draft.sources) {
        sources.append(el("li", {}, el("strong", { text: src.label }), " ",
          el("a", { href: src.document_url, dir: "auto", text: src.title }), src.date ? ` (${src.date})` : ""));
      }
      draftBody.append(el("h3", { text: "Sources" }), sources);
    }
    const flagged = draft.flagged ? `, ${draft.flagged} flagged` : "";
    const trail = `/trails/${encodeURIComponent(board.dataset.collection)}/${encodeURIComponent(draft.run_id)}`;
    draftBody.append(el("p", { class: "muted",
      text: `${draft.method} draft · ${draft.sentences.length} sentence${draft.sentences.length === 1 ? "" : "s"}${flagged} · ` },
      el("a", { class: "answer-run-link", href: trail, text: `answer run ${draft.run_id} in the trail` })));
    const back = document.querySelector(".board-links");
    if (back) draftBody.append(back.cloneNode(true)); // the search and the candidates' run, under the draft too
    draftSection.hidden = false;
  }

  draftButton.addEventListener("click", async () => {
    draftButton.disabled = true;
    say("Drafting from the accepted sources and checking every citation…");
    try {
      const draft = await trace.api(`/api/collections/${encodeURIComponent(board.dataset.collection)}/answer`, {
        method: "POST", body: { selection: board.dataset.selectionId },
      });
      showDraft(draft);
      say(draft.abstained ? "The draft abstained."
        : draft.withdrawn ? "The draft was withdrawn: no citation held up." : "The draft is ready below.");
      document.getElementById("draft-heading").scrollIntoView({ block: "start" });
    } catch (error) {
      say(`No draft: ${error.message}`);
    } finally {
      draftButton.disabled = false;
    }
  });
})();
