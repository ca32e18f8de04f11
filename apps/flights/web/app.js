// The flights page (docs/flights.md): a map of the United States (us-atlas,
// decoded by topojson-client, both bundled), the airports, the flights in the
// air as arcs, and two boxes whose positions are the query the front relays to
// the flights service.  Everything arrives over one WebSocket (front.py).
"use strict";
(function () {
  const W = 1000, H = 640;
  const svg = document.getElementById("map");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const NS = "http://www.w3.org/2000/svg";
  let extent = { west: -162, east: -62, south: 16, north: 64 };
  let airports = {};          // code -> [lat, lon, name]
  let lastResult = null;
  let lastMessage = null;
  let socket = null;
  const boxes = {
    departure: { west: -74.6, south: 40.4, east: -73.5, north: 41.0 },
    arrival: { west: -88.0, south: 24.0, east: -79.0, north: 31.0 },
  };
  const use = { departure: true, arrival: true };

  // Plate carrée stretched to the panel: a box in degrees is a rectangle here.
  const x = (lon) => (lon - extent.west) * W / (extent.east - extent.west);
  const y = (lat) => (extent.north - lat) * H / (extent.north - extent.south);
  const lon = (px) => extent.west + px * (extent.east - extent.west) / W;
  const lat = (py) => extent.north - py * (extent.north - extent.south) / H;

  function el(name, attributes, parent) {
    const node = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, v);
    if (parent) parent.appendChild(node);
    return node;
  }
  const $ = (id) => document.getElementById(id);

  // ------------------------------------------------------------------ map
  function drawStates() {
    fetch("/vendor/states-10m.json").then((r) => r.json()).then((us) => {
      const states = topojson.feature(us, us.objects.states);
      const group = $("states");
      group.textContent = "";
      for (const feature of states.features) {
        const polygons = feature.geometry.type === "Polygon" ? [feature.geometry.coordinates]
          : feature.geometry.coordinates;
        let d = "";
        for (const polygon of polygons)
          for (const ring of polygon) {
            if (ring.some(([lo]) => lo > 0)) continue;  // the Aleutians west of the antimeridian
            d += ring.map(([lo, la], i) => `${i ? "L" : "M"}${x(lo).toFixed(1)},${y(la).toFixed(1)}`).join("") + "Z";
          }
        const path = el("path", { d }, group);
        el("title", {}, path).textContent = feature.properties.name;
      }
    });
  }

  function drawAirports() {
    const group = $("airports");
    group.textContent = "";
    for (const [code, [la, lo, name]] of Object.entries(airports)) {
      const hub = code === "EWR" || code === "JFK" || code === "LGA";
      const dot = el("circle", { cx: x(lo), cy: y(la), r: hub ? 3.5 : 2.2, class: hub ? "hub" : "" }, group);
      dot.dataset.code = code;
      el("title", {}, dot).textContent = `${code} ${name}`;
    }
  }

  // A flight: [id, origin, dest, carrier, number, tailnum, departure, arrival].
  function curve(f) {
    const from = airports[f[1]], to = airports[f[2]];
    if (!from || !to) return null;
    const x0 = x(from[1]), y0 = y(from[0]), x1 = x(to[1]), y1 = y(to[0]);
    const mx = (x0 + x1) / 2, my = (y0 + y1) / 2, dx = x1 - x0, dy = y1 - y0;
    return { x0, y0, x1, y1, cx: mx - dy * 0.15, cy: my + dx * 0.15 };
  }

  function drawFlights(result) {
    const arcs = $("arcs"), planes = $("planes");
    arcs.textContent = "";
    planes.textContent = "";
    const matching = new Set(result.flights.map((f) => f[0]));
    for (const f of result.airborne || result.flights) {
      const c = curve(f);
      if (!c) continue;
      el("path", { d: `M${c.x0},${c.y0}Q${c.cx},${c.cy} ${c.x1},${c.y1}`, class: matching.has(f[0]) ? "match" : "" },
        arcs);
      if (matching.has(f[0])) {
        const t = Math.min(1, Math.max(0, (result.time - f[6]) / (f[7] - f[6])));
        const px = (1 - t) * (1 - t) * c.x0 + 2 * t * (1 - t) * c.cx + t * t * c.x1;
        const py = (1 - t) * (1 - t) * c.y0 + 2 * t * (1 - t) * c.cy + t * t * c.y1;
        el("circle", { cx: px, cy: py, r: 3 }, planes);
      }
    }
  }

  // ------------------------------------------------------------------ boxes
  const round = (v) => Math.round(v * 1000) / 1000;
  function clampBox(b) {
    const w = Math.min(b.east - b.west, extent.east - extent.west);
    const h = Math.min(b.north - b.south, extent.north - extent.south);
    b.west = round(Math.min(Math.max(b.west, extent.west), extent.east - w));
    b.east = round(Math.min(b.west + w, extent.east));
    b.south = round(Math.min(Math.max(b.south, extent.south), extent.north - h));
    b.north = round(Math.min(b.south + h, extent.north));
  }

  function pointer(event) {
    const p = svg.createSVGPoint();
    p.x = event.clientX;
    p.y = event.clientY;
    return p.matrixTransform(svg.getScreenCTM().inverse());
  }

  function drawBoxes() {
    for (const which of ["departure", "arrival"]) {
      let group = document.getElementById(`box-${which}`);
      if (!group) {
        group = el("g", { id: `box-${which}`, class: `box ${which}` }, $("boxes"));
        const area = el("rect", { class: "area" }, group);
        const handle = el("rect", { class: "handle", width: 10, height: 10 }, group);
        area.addEventListener("mousedown", (e) => startDrag(e, which, "move"));
        handle.addEventListener("mousedown", (e) => startDrag(e, which, "resize"));
      }
      const b = boxes[which];
      const [area, handle] = group.querySelectorAll("rect");
      area.setAttribute("x", x(b.west));
      area.setAttribute("y", y(b.north));
      area.setAttribute("width", Math.max(1, x(b.east) - x(b.west)));
      area.setAttribute("height", Math.max(1, y(b.south) - y(b.north)));
      // Just outside the corner, so that even a small box can be grabbed inside.
      handle.setAttribute("x", x(b.east) - 1);
      handle.setAttribute("y", y(b.south) - 1);
      group.classList.toggle("off", !use[which]);
      $(`${which}-text`).textContent = use[which]
        ? `[${b.west}, ${b.south}] – [${b.east}, ${b.north}]` : "(anywhere)";
    }
  }

  function startDrag(event, which, mode) {
    event.preventDefault();
    const start = pointer(event);
    const original = { ...boxes[which] };
    function move(e) {
      const p = pointer(e);
      const b = boxes[which];
      if (mode === "move") {
        const dlon = lon(p.x) - lon(start.x), dlat = lat(p.y) - lat(start.y);
        Object.assign(b, { west: original.west + dlon, east: original.east + dlon,
                           south: original.south + dlat, north: original.north + dlat });
      } else {
        b.east = Math.max(b.west + 0.2, Math.min(lon(p.x), extent.east));
        b.south = Math.min(b.north - 0.2, Math.max(lat(p.y), extent.south));
      }
      clampBox(b);
      drawBoxes();
    }
    function up() {
      window.removeEventListener("mousemove", move);
      window.removeEventListener("mouseup", up);
      sendQuery();
    }
    window.addEventListener("mousemove", move);
    window.addEventListener("mouseup", up);
  }

  for (const which of ["departure", "arrival"])
    $(`use-${which}`).addEventListener("change", (e) => {
      use[which] = e.target.checked;
      drawBoxes();
      sendQuery();
    });

  $("combine").addEventListener("change", () => sendQuery());

  const asList = (b) => [b.west, b.south, b.east, b.north];
  function currentQuery() {
    return { type: "query", departure: use.departure ? asList(boxes.departure) : null,
             arrival: use.arrival ? asList(boxes.arrival) : null, combine: $("combine").value };
  }
  function sendQuery() {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(currentQuery()));
  }

  // ------------------------------------------------------------------ answers
  const time = (s) => new Date(s * 1000).toISOString().slice(0, 16).replace("T", " ");
  function showResult(result) {
    lastResult = result;
    $("clock").textContent = time(result.time) + " UTC";
    $("in-air").textContent = result.in_air;
    $("matching").textContent = result.matching + (result.truncated ? " (list cut)" : "");
    $("latency").textContent = `${result.latency_ms.toFixed(2)} ms`;
    $("roundtrip").textContent = result.roundtrip_ms === undefined ? "–" : `${result.roundtrip_ms.toFixed(1)} ms`;
    const list = $("flight-list");
    list.textContent = "";
    for (const f of result.flights) {
      const item = document.createElement("li");
      item.dataset.id = f[0];
      item.textContent = `${f[3]} ${f[4]} ${f[1]}→${f[2]}  ${time(f[6]).slice(11)}–${time(f[7]).slice(11)}  ${f[5]}`;
      list.appendChild(item);
    }
    drawFlights(result);
  }

  function setConnection(text, kind) {
    const badge = $("connection");
    badge.textContent = text;
    badge.className = kind;
  }

  function connect() {
    socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`);
    socket.onopen = () => { setConnection("connected", "loading"); sendQuery(); };
    socket.onmessage = (event) => {
      const m = JSON.parse(event.data);
      lastMessage = m;
      if (m.type === "hello") {
        extent = m.extent;
        drawStates();
        drawBoxes();
      } else if (m.type === "airports") {
        airports = {};
        for (const [code, la, lo, name] of m.airports) airports[code] = [la, lo, name];
        drawAirports();
      } else if (m.type === "result") {
        setConnection("live", "online");
        $("message").textContent = "";
        showResult(m);
      } else if (m.type === "status") {
        if (m.state === "offline") setConnection("service offline, retrying", "offline");
        else if (m.state === "loading") setConnection("service loading the flights…", "loading");
        else setConnection("live", "online");
        if (m.message) $("message").textContent = m.message;
        if (m.time !== undefined) $("clock").textContent = time(m.time) + " UTC";
        if (m.in_air !== undefined) $("in-air").textContent = m.in_air;
      } else if (m.type === "error") {
        $("message").textContent = m.message;
      }
    };
    socket.onclose = () => {
      setConnection("disconnected, reconnecting…", "offline");
      setTimeout(connect, 1000);
    };
  }

  drawBoxes();
  connect();

  // For tests and the curious: map coordinates <-> the browser's client pixels.
  window.flightsDemo = {
    toClient(lo, la) {
      const p = svg.createSVGPoint();
      p.x = x(lo);
      p.y = y(la);
      const q = p.matrixTransform(svg.getScreenCTM());
      return { x: q.x, y: q.y };
    },
    boxes: () => JSON.parse(JSON.stringify(boxes)),
    query: currentQuery,
    lastResult: () => lastResult,
    lastMessage: () => lastMessage,
    airportCount: () => Object.keys(airports).length,
  };
})();
