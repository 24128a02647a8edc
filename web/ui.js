// Small DOM helpers shared by the page's parts: element builders, the clipboard, notices
// and the theme.

import * as store from "./store.js";

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

export function button(label, className, onClick, title) {
  const node = el("button", className, label);
  node.type = "button";
  if (title) node.title = title;
  node.addEventListener("click", onClick);
  return node;
}

export async function copyText(text, feedbackButton) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // No clipboard API (an insecure origin): copy through a selected, hidden textarea.
    const area = el("textarea");
    area.value = text;
    area.className = "offscreen";
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  if (feedbackButton) {
    const label = feedbackButton.textContent;
    feedbackButton.textContent = "Copied";
    setTimeout(() => { feedbackButton.textContent = label; }, 1200);
  }
}

// A dismissable line above the chat: kind "info" or "error".
export function showNotice(text, kind = "info") {
  const notice = el("div", "notice " + kind);
  notice.append(el("span", "notice-text", text));
  notice.append(button("×", "notice-close", () => notice.remove(), "Dismiss"));
  document.getElementById("notices").append(notice);
}

function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  document.getElementById("theme-toggle").textContent = theme === "dark" ? "Light" : "Dark";
}

export function setupTheme() {
  const saved = store.loadTheme();
  const prefersDark = window.matchMedia("(prefers-color-scheme: dark)").matches;
  applyTheme(saved || (prefersDark ? "dark" : "light"));
  document.getElementById("theme-toggle").addEventListener("click", () => {
    const next = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
    store.saveTheme(next);
    applyTheme(next);
  });
}
