// A small Markdown renderer that builds DOM nodes, never HTML text.
//
// Why DOM nodes: every piece of the model's text reaches the page through
// document.createTextNode (or textContent), which the browser never parses as markup.
// "<script>alert(1)</script>" or "<img src=x onerror=...>" in a reply is therefore shown
// as those characters, whatever the Markdown around it; there is no escaping step that a
// missed case could defeat. The only attribute taken from the text is a link's href, and
// only for http:, https: and mailto: URLs.
//
// Supported: fenced code blocks (``` with an optional language, each with a copy
// button), ATX headings (#..######), paragraphs, "-"/"*"/"+" and "1." lists (one level),
// block quotes (">"), horizontal rules, and inline `code`, **bold**, *italic*, _italic_,
// ~~strikethrough~~ and [links](https://...). A reply still streaming may end inside a
// code fence: the open fence renders as a code block so far.

const FENCE = /^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)\s*$/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const BULLET = /^\s{0,3}[-*+]\s+(.*)$/;
const NUMBERED = /^\s{0,3}(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;

function el(tag, className) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  return node;
}

function codeBlock(language, code, onCopy) {
  const wrapper = el("div", "code-block");
  const bar = el("div", "code-bar");
  const label = el("span", "code-lang");
  label.textContent = language || "text";
  const copy = el("button", "copy-code");
  copy.type = "button";
  copy.textContent = "Copy";
  copy.addEventListener("click", () => onCopy(code, copy));
  bar.append(label, copy);
  const pre = el("pre");
  const codeNode = el("code");
  codeNode.textContent = code;
  pre.append(codeNode);
  wrapper.append(bar, pre);
  return wrapper;
}

function safeHref(url) {
  try {
    const parsed = new URL(url, window.location.href);
    return ["http:", "https:", "mailto:"].includes(parsed.protocol) ? parsed.href : null;
  } catch {
    return null;
  }
}

// Inline spans, found left to right: the earliest match of any pattern wins; the text
// between matches becomes text nodes.
const INLINE = [
  { re: /`([^`\n]+)`/, make: (m) => { const c = el("code"); c.textContent = m[1]; return c; } },
  { re: /\*\*(?=\S)([\s\S]*?\S)\*\*/, make: (m) => wrap("strong", m[1]) },
  { re: /~~(?=\S)([\s\S]*?\S)~~/, make: (m) => wrap("del", m[1]) },
  { re: /\*(?=[^\s*])([^*]*?[^\s*])\*/, make: (m) => wrap("em", m[1]) },
  { re: /(?<![\w])_(?=[^\s_])([^_]*?[^\s_])_(?![\w])/, make: (m) => wrap("em", m[1]) },
  { re: /\[([^\]\n]+)\]\(([^)\s]+)\)/, make: linkOrText },
];

function wrap(tag, inner) {
  const node = el(tag);
  appendInline(node, inner);
  return node;
}

function linkOrText(m) {
  const href = safeHref(m[2]);
  if (!href) return document.createTextNode(m[0]);
  const a = el("a");
  a.href = href;
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  appendInline(a, m[1]);
  return a;
}

function appendInline(parent, text) {
  while (text.length > 0) {
    let best = null;
    for (const rule of INLINE) {
      const m = rule.re.exec(text);
      if (m && (best === null || m.index < best.m.index)) best = { m, rule };
    }
    if (best === null) {
      parent.append(document.createTextNode(text));
      return;
    }
    if (best.m.index > 0) parent.append(document.createTextNode(text.slice(0, best.m.index)));
    parent.append(best.rule.make(best.m));
    text = text.slice(best.m.index + best.m[0].length);
  }
}

// Lines joined inside a paragraph keep their breaks visible (models use single newlines).
function appendLines(parent, lines) {
  lines.forEach((line, i) => {
    if (i > 0) parent.append(el("br"));
    appendInline(parent, line);
  });
}

// Renders `text` into a DocumentFragment. `onCopy(code, button)` runs when a code
// block's copy button is pressed.
export function renderMarkdown(text, onCopy) {
  const out = document.createDocumentFragment();
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = FENCE.exec(line);
    if (fence) {
      const marker = fence[1];
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(marker)) body.push(lines[i++]);
      i++;  // the closing fence (or past the end while the reply streams)
      out.append(codeBlock(fence[2], body.join("\n"), onCopy));
      continue;
    }
    if (line.trim() === "") { i++; continue; }
    const heading = HEADING.exec(line);
    if (heading) {
      const h = el("h" + Math.min(heading[1].length + 2, 6));
      appendInline(h, heading[2]);
      out.append(h);
      i++;
      continue;
    }
    if (RULE.test(line)) { out.append(el("hr")); i++; continue; }
    if (QUOTE.test(line)) {
      const quoted = [];
      while (i < lines.length && QUOTE.test(lines[i])) quoted.push(QUOTE.exec(lines[i++])[1]);
      const block = el("blockquote");
      block.append(renderMarkdown(quoted.join("\n"), onCopy));
      out.append(block);
      continue;
    }
    if (BULLET.test(line) || NUMBERED.test(line)) {
      const numbered = NUMBERED.test(line);
      const pattern = numbered ? NUMBERED : BULLET;
      const list = el(numbered ? "ol" : "ul");
      if (numbered) list.start = Number(NUMBERED.exec(line)[1]);
      while (i < lines.length && pattern.test(lines[i])) {
        const m = pattern.exec(lines[i++]);
        const item = el("li");
        const itemLines = [numbered ? m[2] : m[1]];
        // Indented continuation lines belong to the item.
        while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !pattern.test(lines[i])) {
          itemLines.push(lines[i++].trim());
        }
        appendLines(item, itemLines);
        list.append(item);
      }
      out.append(list);
      continue;
    }
    const paragraph = [];
    while (i < lines.length && lines[i].trim() !== "" && !FENCE.test(lines[i]) &&
           !HEADING.test(lines[i]) && !BULLET.test(lines[i]) && !NUMBERED.test(lines[i]) &&
           !QUOTE.test(lines[i]) && !RULE.test(lines[i])) {
      paragraph.push(lines[i++]);
    }
    const p = el("p");
    appendLines(p, paragraph);
    out.append(p);
  }
  return out;
}
