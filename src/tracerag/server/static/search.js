// The search page works as a plain GET form without this file; it adds a shortcut ("/" puts the cursor in the
// words box) and keeps empty boxes out of the address.
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
