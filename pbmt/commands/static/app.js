// The teaching page of `pbmt serve`: asks POST /explain and draws its answer. No libraries, no build step.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { model: null, weights: [], data: null, stack: 0, trace: null, seq: 0, shown: 0, controller: null };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("data-")) node.setAttribute(k, v);
    else node[k] = v;
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

// rounding first keeps a tiny negative from showing as "-0.000"
const fmt = (x, digits = 3) => (x === null || x === undefined ? "" : (Number(Number(x).toFixed(digits)) + 0).toFixed(digits));
function numCell(x, digits = 3) {
  return el("td", { class: "num " + (x > 0 ? "pos" : x < 0 ? "neg" : "") }, x ? fmt(x, digits) : "0");
}
function setStatus(text, error = false) {
  $("status").textContent = text;
  $("status").className = error ? "error" : "";
}

async function start() {
  const answer = await fetch("/model");
  state.model = await answer.json();
  for (const s of state.model.samples) $("samples").append(el("option", { value: s }, s));
  $("samples").addEventListener("change", () => {
    if ($("samples").value) { $("source").value = $("samples").value; explainNow(); }
  });
  $("ask").addEventListener("submit", (e) => { e.preventDefault(); explainNow(); });
  buildControls();
  $("reset").addEventListener("click", () => { resetControls(); explainSoon(); });
  $("stack-prev").addEventListener("click", () => showStack(state.stack - 1));
  $("stack-next").addEventListener("click", () => showStack(state.stack + 1));
  $("stack-all").addEventListener("change", () => showStack(state.stack));
  $("options-all").addEventListener("change", drawOptions);
  setStatus("Ready: type a sentence or pick a sample.");
  // open on the first sample, so the page shows a search before anything is typed
  if (state.model.samples.length && !$("source").value) {
    $("samples").value = $("source").value = state.model.samples[0];
    explainNow();
  }
}

function buildControls() {
  const box = $("weights");
  box.replaceChildren();
  state.model.labels.forEach((label, k) => {
    const w = state.model.weights[k];
    const span = Math.max(1, 3 * Math.abs(w));
    const slider = el("input", { type: "range", min: -span, max: span, step: span / 100, value: w,
                                 "data-column": k, "data-label": label });
    const out = el("output", {}, fmt(w, 2));
    slider.addEventListener("input", () => {
      state.weights[k] = Number(slider.value);
      out.textContent = fmt(slider.value, 2);
      explainSoon();
    });
    box.append(el("label", { title: label }, label, slider, out));
  });
  for (const id of ["distortion", "stack-size", "pop-limit"]) {
    $(id).addEventListener("input", () => { $(id + "-value").textContent = $(id).value; explainSoon(); });
  }
  $("beam").addEventListener("change", explainSoon);
  $("algorithm").addEventListener("change", () => { $("pop-limit").disabled = $("algorithm").value !== "cube"; explainSoon(); });
  resetControls();
}

function resetControls() {
  const m = state.model;
  state.weights = m.weights.slice();
  document.querySelectorAll("#weights input").forEach((s, k) => {
    s.value = m.weights[k];
    s.nextElementSibling.textContent = fmt(m.weights[k], 2);
  });
  $("distortion").value = m.settings.distortion_limit;
  $("distortion-value").textContent = m.settings.distortion_limit;
  $("stack-size").max = Math.max(400, m.settings.stack_size);
  $("stack-size").value = m.settings.stack_size;
  $("stack-size-value").textContent = m.settings.stack_size;
  $("algorithm").value = m.settings.search;
  $("pop-limit").max = Math.max(5000, m.settings.pop_limit);
  $("pop-limit").value = m.settings.pop_limit;
  $("pop-limit-value").textContent = m.settings.pop_limit;
  $("pop-limit").disabled = m.settings.search !== "cube";
  const beam = $("beam");
  if (![...beam.options].some((o) => Number(o.value) === m.settings.beam_threshold)) {
    beam.append(el("option", { value: m.settings.beam_threshold }, String(m.settings.beam_threshold)));
  }
  beam.value = [...beam.options].find((o) => Number(o.value) === m.settings.beam_threshold).value;
}

function weightsByFeature() {
  const out = {};
  let k = 0;
  state.model.features.forEach((name, f) => {
    out[name] = state.weights.slice(k, k + state.model.sizes[f]);
    k += state.model.sizes[f];
  });
  return out;
}

let timer = null;
function explainSoon() {
  clearTimeout(timer);
  if ($("source").value.trim()) timer = setTimeout(explainNow, 250);
}

async function explainNow() {
  const sentence = $("source").value.trim();
  if (!sentence) { setStatus("Type a sentence first.", true); return; }
  if (state.controller) state.controller.abort();  // the server drops the abandoned request's work
  const controller = new AbortController();
  state.controller = controller;
  const seq = ++state.seq;
  const body = {
    sentence, tokenized: $("tokenized").checked, n_best: 10, hypotheses_per_stack: 50,
    reference: $("reference").value.trim() || null,
    weights: weightsByFeature(),
    search: { distortion_limit: Number($("distortion").value), stack_size: Number($("stack-size").value),
              beam_threshold: Number($("beam").value), search: $("algorithm").value,
              pop_limit: Number($("pop-limit").value) },
  };
  setStatus("Decoding…");
  let answer;
  try {
    answer = await fetch("/explain", { method: "POST", headers: { "content-type": "application/json" },
                                       body: JSON.stringify(body), signal: controller.signal });
  } catch (err) {
    if (err.name !== "AbortError") setStatus("The server did not answer: " + err.message, true);
    return;
  }
  let data;
  try {
    data = await answer.json();
  } catch (err) {
    if (seq === state.seq) setStatus(`The server answered ${answer.status} ${answer.statusText}`, true);
    return;
  }
  if (seq !== state.seq) return;
  if (!answer.ok) { setStatus(data.error || answer.statusText, true); return; }
  state.data = data;
  state.trace = null;
  draw();
  state.shown = seq;
  document.body.dataset.version = String(seq);
  setStatus(`Decoded ${data.source.length} words.`);
}

function draw() {
  const d = state.data;
  $("views").hidden = false;
  $("translation").textContent = d.text;  // detokenised and cased as /translate writes it
  $("translation").title = "the model's tokens: " + d.translation;
  $("score").textContent = fmt(d.score, 4);
  drawAlignment();
  drawDerivation();
  drawNbest();
  drawReference();
  drawFuture();
  drawOptions();
  showStack(Math.min(state.stack, d.stacks.length - 1));
}

function drawAlignment() {
  const d = state.data;
  const target = d.translation.split(" ");
  const links = new Set(d.alignment.map(([s, t]) => s + ":" + t));
  const blockOf = new Map();
  d.blocks.forEach((b, k) => {
    for (let t = b.target_span[0]; t < b.target_span[1]; t++)
      for (let s = b.source[0]; s < b.source[1]; s++) blockOf.set(s + ":" + t, k);
  });
  const table = el("table", { class: "grid" });
  table.append(el("tr", {}, el("th"), ...d.source.map((w) => el("th", { class: "v" }, w))));
  target.forEach((word, t) => {
    const row = el("tr", {}, el("th", {}, word));
    d.source.forEach((_, s) => {
      const b = blockOf.get(s + ":" + t);
      let cls = "";
      if (b !== undefined) {
        cls = "blk";
        for (const [side, ds, dt] of [["bl", -1, 0], ["br", 1, 0], ["bt", 0, -1], ["bb", 0, 1]])
          if (blockOf.get((s + ds) + ":" + (t + dt)) !== b) cls += " " + side;
      }
      if (links.has(s + ":" + t)) cls += " on";
      row.append(el("td", { class: cls, title: `${d.source[s]} — ${word}` }));
    });
    table.append(row);
  });
  $("alignment").replaceChildren(table);
}

// the lexicalized reordering orientations as the feature labels name them
const MSD_SHORT = { monotone: "mono", swap: "swap", discontinuous: "disc" };

function drawDerivation() {
  const d = state.data;
  const labels = d.features.map((f) => f.label);
  const used = labels.map((_, k) => k).filter((k) => d.blocks.some((b) => b.features[k]) || d.end.features[k]);
  const table = $("derivation");
  // feature names stand on end, the feature first and its column below, so the table fits a 1280-pixel screen
  const featureHead = (k) => {
    const [name, ...column] = labels[k].split(" ");
    return el("th", { class: "feat", title: `${labels[k]}: weight ${d.features[k].weight}` },
      name, ...(column.length ? [el("br"), column.join(" ")] : []));
  };
  table.replaceChildren(el("tr", {}, ...["#", "span", "source", "target", "orientation", "jump", "block score"]
    .map((h) => el("th", {}, h)), ...used.map(featureHead)));
  d.blocks.forEach((b, i) => table.append(el("tr", {},
    el("td", {}, i), el("td", {}, `${b.source[0]}–${b.source[1] - 1}`), el("td", {}, b.source_words),
    el("td", {}, b.target), el("td", { title: b.msd }, `${b.orientation.toLowerCase()} (${MSD_SHORT[b.msd] || b.msd})`), el("td", { class: "num" }, b.jump),
    numCell(b.score, 4), ...used.map((k) => numCell(b.weighted[k])))));
  for (const [name, part] of [["end of sentence", d.end], ["total", d.total]]) {
    table.append(el("tr", { class: "sum" }, el("td"), el("td", { colSpan: 5 }, name), numCell(part.score, 4),
      ...used.map((k) => numCell(part.weighted[k]))));
  }
}

function drawNbest() {
  const list = $("nbest");
  list.replaceChildren();
  state.data.nbest.forEach((entry) => {
    const follow = el("button", { type: "button", "data-rank": entry.rank }, "follow");
    follow.addEventListener("click", () => traceEntry(entry));
    list.append(el("li", {}, el("b", {}, fmt(entry.score, 4)), " ", entry.text, " ", follow, el("br"),
      ...entry.segments.map((s) => el("span", { class: "seg", title: `source words ${s.source[0]}–${s.source[1] - 1}` },
        el("span", { class: "src" }, s.source_words + " → "), s.target))));
  });
}

// The reference's path through the stacks (POST /explain's `reference`) and where it fell out.
function drawReference() {
  const r = state.data.reference;
  $("reference-section").hidden = !r;
  if (!r) return;
  const stackLink = (k, text) => {
    const link = el("a", { href: "#stacks-section" }, text);
    link.addEventListener("click", () => showStack(k));
    return link;
  };
  if (r.verdict === "unreachable") {
    $("reference-verdict").replaceChildren(el("b", {}, "Unreachable"), `: no derivation of the model produces “${r.reference}” (${r.why}).`);
    $("reference-path").replaceChildren();
    $("reference-fell").replaceChildren();
    return;
  }
  const verdicts = { "correct": "the output is the reference", "search error": "a search error: the search lost a better-scoring derivation",
                     "model error": "a model error: the model prefers its output" };
  $("reference-verdict").replaceChildren(`Its best derivation scores `, el("b", {}, fmt(r.score, 4)), ` against the output's `,
    el("b", {}, fmt(r.best_score, 4)), `: ${verdicts[r.verdict]}.`);
  $("reference-path").replaceChildren(...r.path.map((step) => el("li", { "data-stack": step.stack },
    `+ “${step.target}” for source words ${step.source[0]}–${step.source[1] - 1}: `,
    stackLink(step.stack, `#${step.hypothesis} in stack ${step.stack}`), ` (${step.status})`)));
  const fell = r.fell_out;
  $("reference-fell").dataset.stack = fell ? String(fell.stack) : "";
  $("reference-fell").dataset.rule = fell ? fell.rule : "";
  $("reference-fell").replaceChildren(...(fell
    ? ["It fell out at ", stackLink(fell.stack, `stack ${fell.stack}`), ` by the `, el("b", {}, fell.rule),
       ` before “${fell.target}”: ${fell.why}.`]
    : ["Its path reached the last stack."]));
}

function traceEntry(entry) {
  state.trace = entry;
  const d = state.data;
  const stackOf = new Map();
  d.stacks.forEach((s) => s.hypotheses.forEach((h) => stackOf.set(h.id, s.stack)));
  const steps = entry.path.map((h, i) => {
    const via = entry.via[i] !== null ? ` (continuing from #${entry.via[i]}, which it was recombined into)` : "";
    const link = el("a", { href: "#stacks-section" }, `#${h} in stack ${stackOf.get(h)}`);
    link.addEventListener("click", () => showStack(stackOf.get(h)));
    return el("li", {}, `+ “${entry.segments[i].target}” for “${entry.segments[i].source_words}”: `, link, via);
  });
  $("trace-info").replaceChildren(`Entry ${entry.rank} (score ${fmt(entry.score, 4)}), block by block; its hypotheses are highlighted:`,
    el("ol", {}, ...steps));
  showStack(stackOf.get(entry.path[0]));
  $("stacks-section").scrollIntoView();
}

function showStack(k) {
  const d = state.data;
  if (!d) return;
  k = Math.max(0, Math.min(k, d.stacks.length - 1));
  state.stack = k;
  const s = d.stacks[k];
  $("stack-label").textContent = `stack ${k} of ${d.stacks.length - 1}`;
  $("stack-prev").disabled = k === 0;
  $("stack-next").disabled = k === d.stacks.length - 1;
  const stats = $("stack-stats");
  for (const key of ["classes", "expanded", "added", "recombined", "beam_rejected", "histogram_pruned", "beam_pruned"])
    stats.setAttribute("data-" + key.replace("_", "-"), s[key]);
  const b = (x) => el("b", {}, x);
  if (k === 0) {
    stats.replaceChildren("The empty hypothesis: nothing covered, nothing translated. Everything starts here.");
  } else {
    const last = k === d.stacks.length - 1;
    stats.replaceChildren(`Hypotheses covering ${k} of ${d.source.length} source words: `, b(s.added), " entered; ",
      b(s.beam_rejected), " more were turned away by the beam before entering; ", b(s.recombined),
      " were recombined, leaving ", b(s.classes), " distinct states. ",
      ...(last ? ["These are complete translations: the best one is the output."]
        : [b(s.expanded), " were expanded; ", b(s.histogram_pruned), " fell to the stack size and ", b(s.beam_pruned),
           " to the beam threshold."]),
      ` Listed: the best ${s.hypotheses.length} by score + future.`);
  }
  const onPath = new Set(state.trace ? state.trace.path : []);
  const onlyKept = $("stack-all").checked === false;
  const table = $("stack-table");
  table.replaceChildren(el("tr", {}, ...["#", "from", "covered", "translation so far", "LM state (last words)", "score", "future",
    "score + future", "what happened"].map((h) => el("th", {}, h))));
  for (const h of s.hypotheses) {
    if (onlyKept && (h.status === "recombined" || h.status.endsWith("pruned")) && !onPath.has(h.id)) continue;
    let cls = h.status;
    if (onPath.has(h.id)) cls += " on-path";
    if (h.status === "complete" && h.rank === 0) cls += " best-final";
    table.append(el("tr", { class: cls, "data-id": h.id, "data-status": h.status },
      el("td", {}, h.id), el("td", {}, h.parent >= 0 ? "#" + h.parent : ""), el("td", { class: "cov" }, h.coverage),
      el("td", {}, h.target), el("td", {}, h.lm_context), numCell(h.score), numCell(h.future), numCell(h.total),
      el("td", { class: "status" }, h.why)));
  }
}

function drawFuture() {
  const d = state.data;
  const n = d.source.length;
  const table = $("future");
  table.replaceChildren(el("tr", {}, el("th", {}, "from \\ to"), ...d.source.map((w, j) => el("th", { title: w }, j))));
  d.future_cost.forEach((row, i) => table.append(el("tr", {}, el("th", {}, `${i} ${d.source[i]}`),
    ...Array.from({ length: n }, (_, j) => (row[j + 1] === null ? el("td") : numCell(row[j + 1], 2))))));
}

function drawOptions() {
  const d = state.data;
  if (!d) return;
  const all = $("options-all").checked;
  const table = $("options");
  table.replaceChildren(el("tr", {}, ...["span", "source", "target", "phrase score", "estimate"].map((h) => el("th", {}, h))));
  for (const span of d.options) {
    const shown = all ? span.options : span.options.slice(0, 5);
    shown.forEach((o, i) => table.append(el("tr", { class: o.chosen ? "chosen" : "" },
      el("td", {}, i === 0 ? `${span.span[0]}–${span.span[1] - 1}` : ""),
      el("td", {}, i === 0 ? `${span.source_words} (${span.options.length})` : ""),
      el("td", {}, o.target + (o.unknown ? " (unknown word)" : o.markup ? " (given by the markup)" : "")),
      numCell(o.score), numCell(o.estimate))));
  }
}

start().catch((err) => setStatus("Could not load the model's description: " + err.message, true));
