// The search page: the form is POSTed (recorded in the trail, then redirected to the results' address); it works
// without this file, which adds a shortcut ("/" puts the cursor in the words box) and keeps empty boxes out.
"use strict";

document.addEventListener("keydown", (event) => {
  if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
  const box = document.getElementById("q");
  if (box) {
    event.preventDefault();
    box.focus();
    box.select();
  }
});

// Empty boxes stay out of the address, so that a search's address reads as what was asked
// (`/?q=fire&from=1880`, not `...&to=&windows=&k=&filter=...`). Re-enabled when the page is shown again (Back).
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.classList.contains("search-form")) return;
  for (const input of form.querySelectorAll("input[type=text], input[type=search], input[type=number]")) {
    if (input.value.trim() === "") input.disabled = true;
  }
});
window.addEventListener("pageshow", () => {
  for (const input of document.querySelectorAll(".search-form input:disabled")) input.disabled = false;
});

// "Add to selection" without leaving the page: the result is accepted into its run's selection through the
// selections API (the button's own form post, /search/select, does the same without JavaScript).
document.addEventListener("click", async (event) => {
  const button = event.target instanceof Element ? event.target.closest("button.add-button") : null;
  if (!button) return;
  const form = button.form;
  const run = form && form.querySelector("input[name=run]");
  const collection = form && form.querySelector("[name=c]");
  if (!run || !collection) return; // no recorded run: the form post says why
  event.preventDefault();
  button.disabled = true;
  const doc = button.dataset.doc;
  const path = `/api/collections/${encodeURIComponent(collection.value)}/selections/${encodeURIComponent(run.value)}/decisions`;
  try {
    await trace.api(path, { method: "POST", body: { doc_id: doc, decision: "accept", run: run.value } });
    const done = trace.el("span", { class: "in-selection", "data-doc": doc, text: "In the selection" });
    button.replaceWith(done);
  } catch (error) {
    button.disabled = false;
    const said = trace.el("span", { class: "error", role: "alert", text: `Not added: ${error.message}` });
    button.after(said);
  }
});

// On a narrow screen the filters fold away under their heading, so that the results come first; they stay open
// when one of them is set (one sees what narrowed the results) or the window widens. Without this file they are
// open everywhere.
{
  const filters = document.querySelector("details.filters");
  const narrow = window.matchMedia("(max-width: 48rem)");
  const isSet = (el) => (el.type === "checkbox" ? el.checked : el.value.trim() !== "") || el.getAttribute("aria-invalid") === "true";
  if (filters) {
    if (narrow.matches && ![...filters.querySelectorAll("input, select")].some(isSet)) filters.open = false;
    narrow.addEventListener("change", (event) => { if (!event.matches) filters.open = true; });
  }
}
