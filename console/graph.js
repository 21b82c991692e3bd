// A flow drawn as a graph, laid out automatically from left to right: our own layered layout
// (a small Sugiyama-style pass) and SVG drawing, no library.
//
// Layout: edges that close a cycle (flows may loop through a delay node) are set aside; every
// other node's layer is the longest path to it from a source, so each edge points right. The
// order within a layer follows the barycentre of the neighbours in a few down-and-up sweeps,
// keeping the order with the fewest crossings between adjacent layers. Edges are cubic curves
// from the source's output port to the target's left side, ending in an arrowhead.

const SVG = "http://www.w3.org/2000/svg";
export const NODE = { width: 150, height: 48 };
const GAP = { x: 56, y: 24 };
/** A wide flow is scaled down to fit its box, but not below this, so its text stays legible. */
const MIN_SCALE = 0.6;
const MARGIN = 20;
const SWEEPS = 4;
/** How far right of its source an edge going back turns, and the spacing of such edges below. */
const BACK_REACH = 40;
const BACK_STEP = 10;

function el(name, attrs = {}, parent) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (parent) parent.append(node);
  return node;
}

/** The edges of `nodes` (`{id, wires: [[id…] per port]}`): `{from, port, to}`. */
export function edgesOf(nodes) {
  const known = new Set(nodes.map((n) => n.id));
  const edges = [];
  for (const node of nodes) {
    (node.wires ?? []).forEach((targets, port) => {
      for (const to of targets ?? []) if (known.has(to)) edges.push({ from: node.id, port, to });
    });
  }
  return edges;
}

/** Marks the edges that close a cycle (`back: true`), by depth-first search from the sources. */
function markBackEdges(ids, edges) {
  const out = new Map(ids.map((id) => [id, []]));
  const indegree = new Map(ids.map((id) => [id, 0]));
  for (const e of edges) {
    out.get(e.from).push(e);
    indegree.set(e.to, indegree.get(e.to) + 1);
  }
  const state = new Map(); // id → "open" | "done"
  const starts = [...ids.filter((id) => indegree.get(id) === 0), ...ids];
  for (const start of starts) {
    if (state.has(start)) continue;
    const stack = [[start, 0]];
    state.set(start, "open");
    while (stack.length) {
      const top = stack[stack.length - 1];
      const edge = out.get(top[0])[top[1]++];
      if (!edge) {
        state.set(top[0], "done");
        stack.pop();
      } else if (state.get(edge.to) === "open") {
        edge.back = true;
      } else if (!state.has(edge.to)) {
        state.set(edge.to, "open");
        stack.push([edge.to, 0]);
      }
    }
  }
}

/**
 * Crossings between the edges from layer `a` to layer `a + 1` under `position`; a source's
 * ports count in order, so a switch's first port leading to the lower node is a crossing too.
 */
function crossings(layers, edges, layerOf, position, ports) {
  const at = (e) => position.get(e.from) + e.port / ports.get(e.from);
  let count = 0;
  for (let a = 0; a + 1 < layers.length; a++) {
    const span = edges.filter((e) => !e.back && layerOf.get(e.from) === a && layerOf.get(e.to) === a + 1);
    for (let i = 0; i < span.length; i++) {
      for (let j = i + 1; j < span.length; j++) {
        const s = at(span[i]) - at(span[j]);
        const t = position.get(span[i].to) - position.get(span[j].to);
        if (s * t < 0) count++;
      }
    }
  }
  return count;
}

/**
 * Places `nodes` (`{id, wires}`): returns `{positions: Map id → {x, y, layer}, edges, width,
 * height}`, with `edges` as from `edgesOf`, back edges marked.
 */
export function layout(nodes) {
  const ids = nodes.map((n) => n.id);
  const edges = edgesOf(nodes);
  markBackEdges(ids, edges);
  const forward = edges.filter((e) => !e.back);

  // Longest path from a source, in topological order (Kahn) over the forward edges.
  const layerOf = new Map(ids.map((id) => [id, 0]));
  const indegree = new Map(ids.map((id) => [id, 0]));
  for (const e of forward) indegree.set(e.to, indegree.get(e.to) + 1);
  const ready = ids.filter((id) => indegree.get(id) === 0);
  while (ready.length) {
    const id = ready.shift();
    for (const e of forward.filter((f) => f.from === id)) {
      layerOf.set(e.to, Math.max(layerOf.get(e.to), layerOf.get(id) + 1));
      indegree.set(e.to, indegree.get(e.to) - 1);
      if (indegree.get(e.to) === 0) ready.push(e.to);
    }
  }
  const layers = [];
  for (const id of ids) (layers[layerOf.get(id)] ??= []).push(id);
  for (let i = 0; i < layers.length; i++) layers[i] ??= [];

  // Order within layers: barycentre sweeps, keeping the best order seen.
  const ports = new Map(nodes.map((n) => [n.id, Math.max(1, (n.wires ?? []).length)]));
  const position = new Map();
  const index = () => layers.forEach((layer) => layer.forEach((id, i) => position.set(id, i)));
  index();
  let best = { count: crossings(layers, edges, layerOf, position, ports), order: layers.map((l) => [...l]) };
  for (let sweep = 0; sweep < SWEEPS && best.count > 0; sweep++) {
    const down = sweep % 2 === 0;
    const order = down ? layers.map((_, i) => i) : layers.map((_, i) => layers.length - 1 - i);
    for (const at of order) {
      const weight = (id) => {
        const all = forward.filter((e) => (down ? e.to === id : e.from === id));
        // Neighbours in the adjacent layer decide; positions in farther layers do not compare.
        const step = down ? at - 1 : at + 1;
        const adjacent = all.filter((e) => layerOf.get(down ? e.from : e.to) === step);
        const near = adjacent.length ? adjacent : all;
        if (!near.length) return position.get(id);
        // A source's port counts as a fraction, so a switch's first port feeds the upper node.
        const sum = near.reduce(
          (s, e) => s + (down ? position.get(e.from) + e.port / ports.get(e.from) : position.get(e.to)),
          0,
        );
        return sum / near.length;
      };
      const weights = new Map(layers[at].map((id) => [id, weight(id)]));
      layers[at].sort((a, b) => weights.get(a) - weights.get(b));
      index();
    }
    const count = crossings(layers, edges, layerOf, position, ports);
    if (count < best.count) best = { count, order: layers.map((l) => [...l]) };
  }
  best.order.forEach((layer, i) => (layers[i] = layer));
  index();

  const tallest = Math.max(1, ...layers.map((l) => l.length));
  const height = 2 * MARGIN + tallest * NODE.height + (tallest - 1) * GAP.y;
  const positions = new Map();
  layers.forEach((layer, l) => {
    const used = layer.length * NODE.height + (layer.length - 1) * GAP.y;
    const top = (height - used) / 2;
    layer.forEach((id, i) => {
      positions.set(id, {
        layer: l,
        x: MARGIN + l * (NODE.width + GAP.x),
        y: top + i * (NODE.height + GAP.y),
      });
    });
  });
  const width = 2 * MARGIN + layers.length * NODE.width + Math.max(0, layers.length - 1) * GAP.x;
  return { positions, edges, width, height };
}

/** `text` cut to `max` characters with an ellipsis. */
const cut = (text, max) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/**
 * The curve from `a`'s port to `b`'s left side. An edge going back (or within a layer) runs
 * out to the right, along `low` under every node, and up into `b` from below.
 */
function curve(a, b, port, portCount, low) {
  const sx = a.x + NODE.width;
  const sy = a.y + (NODE.height * (port + 1)) / (portCount + 1);
  const tx = b.x;
  const ty = b.y + NODE.height / 2;
  if (tx > sx) {
    const bend = Math.max(30, (tx - sx) / 2);
    return `M${sx},${sy} C${sx + bend},${sy} ${tx - bend},${ty} ${tx},${ty}`;
  }
  const mid = b.x + NODE.width / 2;
  return (
    `M${sx},${sy} C${sx + BACK_REACH},${sy} ${sx + BACK_REACH},${low} ${sx},${low} ` +
    `L${mid + 20},${low} Q${mid},${low} ${mid},${b.y + NODE.height}`
  );
}

/**
 * Draws `nodes` (`{id, type, name?, wires}`) into `svg`; `onSelect(node)` runs when a node is
 * clicked or chosen with Enter or Space. Node groups carry `data-id`, edges `data-from`,
 * `data-to` and `data-port`. Returns `select(id)`, which marks a node as chosen.
 */
export function drawFlow(svg, nodes, onSelect) {
  const laid = layout(nodes);
  const { positions, edges, height } = laid;
  let width = laid.width;
  const backs = edges.filter((e) => e.back).length;
  const extra = backs ? 10 + backs * BACK_STEP : 0;
  width += backs ? BACK_REACH : 0;
  svg.replaceChildren();
  svg.setAttribute("viewBox", `0 0 ${width} ${height + extra}`);
  // Natural size, shrunk to the box's width by CSS (max-width) down to MIN_SCALE, then scrolled.
  svg.setAttribute("width", width);
  svg.setAttribute("height", height + extra);
  svg.style.minWidth = `${Math.round(width * MIN_SCALE)}px`;
  const defs = el("defs", {}, svg);
  const marker = el(
    "marker",
    { id: "flow-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" },
    defs,
  );
  el("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow" }, marker);

  const byId = new Map(nodes.map((n) => [n.id, n]));
  const edgeLayer = el("g", { class: "edges" }, svg);
  let below = 0; // edges going back so far, each on its own line under the nodes
  for (const e of edges) {
    const count = Math.max(1, (byId.get(e.from).wires ?? []).length);
    const low = height - MARGIN + 10 + (e.back ? below++ * BACK_STEP : 0);
    const d = curve(positions.get(e.from), positions.get(e.to), e.port, count, low);
    const path = el(
      "path",
      { d, class: e.back ? "edge back" : "edge", "marker-end": "url(#flow-arrow)" },
      edgeLayer,
    );
    Object.assign(path.dataset, { from: e.from, to: e.to, port: String(e.port) });
    el("title", {}, path).textContent = `${e.from} (port ${e.port + 1}) → ${e.to}`;
  }

  const groups = new Map();
  const select = (id) => {
    for (const [key, g] of groups) g.setAttribute("aria-pressed", String(key === id));
  };
  for (const node of nodes) {
    const at = positions.get(node.id);
    const g = el("g", { class: "node", tabindex: 0, role: "button", "aria-pressed": "false" }, svg);
    g.dataset.id = node.id;
    g.dataset.type = node.type;
    g.setAttribute("aria-label", `${node.type} node ${node.name ?? node.id}`);
    el("rect", { x: at.x, y: at.y, width: NODE.width, height: NODE.height, rx: 6 }, g);
    const type = el("text", { x: at.x + 10, y: at.y + 18, class: "type" }, g);
    type.textContent = cut(node.type, 20);
    const label = el("text", { x: at.x + 10, y: at.y + 36, class: "label" }, g);
    label.textContent = cut(node.name ?? node.id, 18);
    el("title", {}, g).textContent = node.name ? `${node.name} (${node.id})` : node.id;
    const ports = (node.wires ?? []).length;
    for (let p = 0; ports > 1 && p < ports; p++) {
      const cy = at.y + (NODE.height * (p + 1)) / (ports + 1);
      el("circle", { cx: at.x + NODE.width, cy, r: 3.5, class: "port" }, g);
    }
    const choose = () => {
      select(node.id);
      onSelect(node);
    };
    g.addEventListener("click", choose);
    g.addEventListener("keydown", (event) => {
      if (event.key !== "Enter" && event.key !== " ") return;
      event.preventDefault();
      choose();
    });
    groups.set(node.id, g);
  }
  return select;
}
