// memspool's pages work without this script; it only saves a few clicks.
// No request leaves this server: fetch() goes to the page's own origin only
// (the Content-Security-Policy says so too).
"use strict";

// A filter's select or checkbox applies itself as soon as it changes.
document.querySelectorAll("[data-autosubmit]").forEach((field) => {
  field.addEventListener("change", () => field.form && field.form.requestSubmit());
});

// Search as you type: the results part of the page is fetched again (HTML
// rendered and escaped by the server) and the address follows the query.
const live = document.querySelector("form[data-live-search]");
if (live) {
  const results = document.getElementById("results");
  let timer = 0;
  let latest = 0;
  // Submitting the form loads the page anew: no fetch may land on it afterwards.
  live.addEventListener("submit", () => { clearTimeout(timer); latest++; });
  live.querySelector("input[type=search]").addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const query = new URLSearchParams(new FormData(live));
      const asked = ++latest;
      const url = "/ui/search?" + query.toString();
      try {
        const response = await fetch(url + "&fragment=1", { credentials: "same-origin" });
        if (!response.ok || asked !== latest) return;
        results.innerHTML = await response.text();
        history.replaceState(null, "", url);
      } catch (error) {
        // The plain form still works: Enter submits it.
      }
    }, 250);
  });
}

// "Copy" for the context block, where the clipboard is available.
document.querySelectorAll("[data-copy]").forEach((button) => {
  const source = document.getElementById(button.dataset.copy);
  if (!source || !navigator.clipboard) return;
  button.hidden = false;
  button.addEventListener("click", async () => {
    await navigator.clipboard.writeText(source.textContent);
    button.textContent = "Copied";
  });
});
