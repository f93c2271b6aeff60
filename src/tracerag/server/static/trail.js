// The trail viewer: one button opens or closes every model call's details at once (each also opens by itself).
"use strict";

(() => {
  const button = document.getElementById("toggle-calls");
  if (!button) return;
  button.addEventListener("click", () => {
    const open = button.getAttribute("aria-pressed") !== "true";
    for (const details of document.querySelectorAll("details.llm-call")) details.open = open;
    button.setAttribute("aria-pressed", String(open));
    button.textContent = open ? "Collapse every model call" : "Expand every model call";
  });
})();
