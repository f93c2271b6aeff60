// The ask page: start an agent run (POST /api/collections/{name}/ask), follow its job's events (plan, current
// sub-question, verdict counts, tokens and cost so far), then show the ranked sources. Every piece of text from a
// question, a document or a model is set with textContent (trace.el), never as HTML.
"use strict";

(() => {
  const form = document.getElementById("ask-form");
  if (!form) return;
  const $ = (id) => document.getElementById(id);
  const { el } = window.trace;

  const STAGES = {
    reeval: (sq) => `re-evaluating the held documents${sq === null ? "" : ` of sub-question ${sq + 1}`}`,
    briefing: (sq) => `briefing and re-planning${sq === null ? "" : ` after sub-question ${sq + 1}`}`,
    rank: () => "ranking the accepted sources",
  };

  // how a run ended, in words (the code stays in parentheses: it is what the trail and the CLI say)
  const OUTCOMES = {
    complete: "complete: the agent ran to the end",
    no_llm: "no model: these are the hybrid search results, the agent did not run",
    truncated: "stopped early: the result holds what was found until then",
    failed: "failed: the result is the hybrid search results",
  };
  const LOOP_ENDS = {
    action_failures: "the model twice gave no usable answer",
    step_limit: "the step limit was reached",
    repeats: "the model repeated a search",
    nothing_found: "nothing was found",
  };
  const outcome = (status) => (OUTCOMES[status] ? `${OUTCOMES[status]} (${status})` : status);
  // "sub-question 2: action_failures" (the pipeline's 0-based index) → words
  function reason(message) {
    const m = /^sub-question (\d+): (\w+)$/.exec(message || "");
    if (!m || !LOOP_ENDS[m[2]]) return message;
    return `at sub-question ${Number(m[1]) + 1}, ${LOOP_ENDS[m[2]]} (${m[2]})`;
  }

  const collection = () => $("ask-collection").value;
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

  function setStatus(text) {
    $("ask-status").textContent = text;
  }

  function log(...parts) {
    $("ask-log").append(el("li", {}, ...parts));
  }

  function showPlan(questions, replanned) {
    const list = $("ask-plan");
    list.replaceChildren(...questions.map((q, i) => el("li", { "data-sq": i }, q)));
    if (replanned) log("re-planned: ", plural(questions.length, "sub-question"));
  }

  function markCurrent(sq) {
    for (const item of $("ask-plan").children) {
      const current = Number(item.dataset.sq) === sq;
      item.classList.toggle("current", current);
      if (current) item.setAttribute("aria-current", "step");
      else item.removeAttribute("aria-current");
    }
  }

  const handlers = {
    note: (e) => log(el("span", { class: "muted" }, e.message)),
    run: (e) => {
      $("ask-run").textContent = e.run_id;
      setStatus(e.llm ? `the agent is working with ${e.llm.provider}/${e.llm.model}…` : "searching…");
    },
    plan: (e) => showPlan(e.sub_questions, e.replanned),
    sub_question: (e) => {
      $("ask-now").textContent = trace.shown(`sub-question ${e.sq + 1} of ${e.of}: ${e.question ?? ""}`);
      markCurrent(e.sq);
    },
    stage: (e) => {
      const say = STAGES[e.stage];
      $("ask-now").textContent = say ? say(e.sq) : e.stage;
      markCurrent(-1);
    },
    search: (e) => {
      const what = e.query ? `“${e.query}”` : "";
      const found = e.skipped ? `skipped: ${e.skipped}` : `${plural(e.results, "result")}, ${e.new} new`;
      log(el("span", { class: "tool" }, e.tool), " ", what, ` → ${found}`);
    },
    verdicts: (e) => {
      $("ask-verdicts").replaceChildren(
        el("span", { class: "verdict-accept" }, `${e.accept} accepted`), " · ",
        el("span", { class: "verdict-hold" }, `${e.hold} held`), " · ",
        el("span", { class: "verdict-reject" }, `${e.reject} rejected`),
        el("span", { class: "muted" }, " (chunks judged, by their latest verdict)"),
      );
    },
    llm: (e) => {
      $("ask-llm").textContent =
        `${plural(e.calls, "call")} · ${e.tokens.toLocaleString("en")} tokens · $${e.cost_usd.toFixed(4)}`;
    },
    result: (e) => {
      setStatus(`the run ended: ${outcome(e.status)}; ${plural(e.sources, "source")} ranked`);
      ended(e.status, e.message);
    },
  };

  // What the progress still says "waiting"/"none yet" about once a run has ended: what happened instead.
  function ended(status, message) {
    const plan = $("ask-plan");
    if (plan.querySelector("[data-sq]") === null) {
      const why = status === "no_llm" ? "no plan: the run had no model"
        : status === "failed" ? `no plan: the run failed (${message})` : "no plan was made";
      plan.replaceChildren(el("li", { class: "muted" }, why));
    }
    const none = status === "no_llm" ? "none: no model ran" : "none";
    if ($("ask-verdicts").textContent === "none yet") $("ask-verdicts").textContent = none;
    if ($("ask-llm").textContent === "none yet") $("ask-llm").textContent = none;
  }

  function documentHref(name, source) {
    let href = `/collections/${encodeURIComponent(name)}/documents/${encodeURIComponent(source.doc_id)}`;
    if (source.span) href += `?start=${source.span[0]}&end=${source.span[1]}#span`;
    return href;
  }

  function sourceItem(name, s) {
    const verdict = s.verdict
      ? el("span", { class: `verdict verdict-${s.verdict}` }, s.verdict)
      : el("span", { class: "verdict muted" }, "not judged (warm start)");
    const meta = [s.date, s.corpus, s.publication].filter(Boolean).join(" · ");
    const item = el(
      "li",
      { class: "ask-source" },
      el("h3", { dir: "auto" }, el("a", { href: documentHref(name, s) }, s.title)),
      el("p", { class: "meta" }, verdict, meta ? ` · ${meta}` : "",
        s.promoted_from_hold ? " · promoted from hold" : "", ` · ${s.doc_id}`),
    );
    if (s.quote) item.append(el("blockquote", { class: "quote", dir: "auto" }, s.quote));
    if (s.reasons.length) {
      item.append(
        el("ul", { class: "reasons" }, ...s.reasons.map((reason, i) => {
          const sq = s.accepted_by[i];
          const by = sq === undefined ? "" : `sub-question ${sq + 1} (${s.sub_questions[i] ?? ""}): `;
          return el("li", {}, el("span", { class: "muted" }, by), reason);
        })),
      );
    }
    for (const flag of s.flags) item.append(el("p", { class: "error" }, flag));
    return item;
  }

  function showResult(result) {
    $("ask-result").hidden = false;
    const v = result.verdicts;
    $("ask-shown-question").textContent = trace.shown(result.question);
    if (!$("ask-question").value.trim()) $("ask-question").value = result.question;
    $("ask-summary").textContent =
      `${outcome(result.status)} · ${plural(result.sources.length, "source")} · ${v.accepted} accepted, ${v.held} held, ` +
      `${v.rejected} rejected documents · ${plural(result.llm_calls, "model call")} · ` +
      `${result.tokens.toLocaleString("en")} tokens · $${result.cost_usd.toFixed(4)}` +
      (result.wall_s === null ? "" : ` · ${result.wall_s.toFixed(1)} s`);
    const message = $("ask-message");
    // without a model the run's own message names the CLI's --llm; the advice says where it goes here instead
    const own = result.status === "no_llm" && result.advice ? "" : reason(result.message);
    const said = [own, result.advice].filter(Boolean).join(" ");
    message.hidden = !said;
    message.textContent = said;
    $("ask-trail").href =
      `/trails/${encodeURIComponent(result.collection)}/${encodeURIComponent(result.run_id)}`;
    $("ask-sources").replaceChildren(...result.sources.map((s) => sourceItem(result.collection, s)));
  }

  function showError(message) {
    const box = $("ask-error");
    box.hidden = false;
    box.textContent = message;
  }

  async function ask(question, k) {
    const name = collection();
    const job = await window.trace.api(`/api/collections/${encodeURIComponent(name)}/ask`, {
      method: "POST",
      body: { question, k },
    });
    $("ask-progress").hidden = false;
    setStatus("started…");
    const end = await window.trace.follow(job.id, (event) => {
      const handle = handlers[event.kind];
      if (handle) handle(event);
    });
    if (end.status !== "done") {
      setStatus("the run failed");
      showError(end.error || "the run failed");
      ended("failed", end.error || "");
      return;
    }
    $("ask-now").textContent = "done";
    markCurrent(-1);
    const finished = await window.trace.api(`/api/jobs/${encodeURIComponent(job.id)}`);
    showResult(finished.result);
    // a reload (or the address, shared) shows this run again
    const here = new URL(window.location.href);
    here.search = new URLSearchParams({ collection: name, run: finished.result.run_id }).toString();
    window.history.replaceState(null, "", here);
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const question = $("ask-question").value.trim();
    if (!question) {
      showError("Write a question first.");
      $("ask-question").focus();
      return;
    }
    $("ask-error").hidden = true;
    $("ask-result").hidden = true;
    $("ask-log").replaceChildren();
    $("ask-plan").replaceChildren(el("li", { class: "muted" }, "waiting for the plan…"));
    const button = $("ask-submit");
    button.disabled = true;
    try {
      await ask(question, Number($("ask-k").value) || 10);
    } catch (error) {
      showError(error.message);
    } finally {
      button.disabled = false;
    }
  });

  // /ask?collection=NAME&run=RUN: a past run's result, from its trail
  const past = form.dataset.run;
  if (past) {
    window.trace
      .api(`/api/collections/${encodeURIComponent(collection())}/runs/${encodeURIComponent(past)}`)
      .then(showResult)
      .catch((error) => showError(error.message));
  }
})();
