// What the browser does for every page, installed once per tab (Streamlit runs this in the page itself).
(() => {
  if (window.__arcClient) return;
  window.__arcClient = true;

  // Back and Forward through control states. Streamlit writes a moved control into the URL with
  // replaceState, so Back would leave the page; after a user's own input we push a history entry instead.
  // On Back, Streamlit reruns as a history navigation and the controls take the URL's values.
  let lastInput = 0;
  for (const type of ["pointerdown", "pointerup", "keydown", "keyup", "input", "change"]) {
    document.addEventListener(type, () => { lastInput = Date.now(); }, true);
  }
  const replaceState = history.replaceState.bind(history);
  history.replaceState = (state, unused, url) => {
    if (url !== undefined && url !== null && Date.now() - lastInput < 3000) {
      const next = new URL(url, location.href);
      if (next.pathname === location.pathname && next.search !== location.search) {
        return history.pushState(state, unused, url);
      }
    }
    return replaceState(state, unused, url);
  };

  // A legend under a chart wraps into as many rows as the chart's width allows, which only the browser knows. The
  // server sends the bottom margin for one row (ui/margins.lines; the row's height in layout.meta); plotly, finding
  // more rows, grows the margin and draws the whole chart again: coverage's charts with three-row legends took
  // 44-48 ms each to draw, 15-22 ms with the margin they need. So before plotly draws such a figure, its margin gets
  // the rows plotly will lay the legend out in at this width, by plotly's own rule for a horizontal legend with no
  // groups, entry widths or border (computeLegendDimensions in src/components/legend/draw.js). Canvas text widths
  // fall a little short of the boxes plotly measures: near a row's end plotly may still find one more row, and draw
  // again, as it did before.
  const LEGEND_GAP_PX = 5;  // plotly's itemGap: between entries, and either side of an entry's symbol
  const LEGEND_SYMBOL_PX = 30 + 2 * LEGEND_GAP_PX;  // before each entry's text
  const measurer = document.createElement("canvas").getContext("2d");
  const legendRows = (names, font, plotWidth) => {
    measurer.font = `${font.size}px ${font.family}`;
    const entries = names.map((name) => LEGEND_SYMBOL_PX + measurer.measureText(name).width);
    const widest = Math.max(...entries);
    const room = Math.max(plotWidth, 2 * LEGEND_SYMBOL_PX);
    const oneRow = entries.reduce((sum, entry) => sum + entry, 0) + (entries.length - 1) * LEGEND_GAP_PX < room;
    let rows = 1, used = 0;
    for (const entry of entries) {
      const step = (oneRow ? entry : widest) + LEGEND_GAP_PX;
      if (used > 0 && step + used - LEGEND_GAP_PX >= room) { rows += 1; used = 0; }
      used += step;
    }
    return rows;
  };
  const fitLegend = (data, layout) => {
    const row = layout?.meta?.legend_row_px;  // the one row's height the margin holds
    if (!row || !layout.width || !layout.height || !layout.margin || !Array.isArray(data)) return;
    const names = data.filter((trace) => trace.showlegend !== false && trace.visible !== false)
      .map((trace) => String(trace.name ?? ""));
    if (!names.length || names.some((name) => /[<$]/.test(name))) return;  // pseudo-HTML or LaTeX: not measured
    // the margin as sent, kept in the figure: Streamlit hands plotly copies of the layout made through JSON
    layout.meta.legend_bottom ??= layout.margin.b;
    const font = { size: layout.font?.size ?? 12, family: layout.font?.family ?? "sans-serif" };
    const rows = legendRows(names, font, layout.width - (layout.margin.l ?? 80) - (layout.margin.r ?? 80));
    const pad = 2 * LEGEND_GAP_PX;  // above and below the rows
    // a legend taller than half the figure is shown that high, and scrolls
    const shown = Math.min(rows * row + pad, Math.max(layout.height / 2, 30));
    layout.margin.b = layout.meta.legend_bottom + Math.max(Math.ceil(shown - (row + pad)), 0);
  };
  const fitLegendsBeforeDrawing = (plotly) => {
    for (const name of ["newPlot", "react"]) {
      const draw = plotly[name];
      plotly[name] = function (graph, data, layout, ...rest) {
        const figure = data && !Array.isArray(data) ? data : { data, layout };  // react(gd, {data, layout, ...})
        fitLegend(figure.data, figure.layout);
        return draw.call(this, graph, data, layout, ...rest);
      };
    }
  };
  // Streamlit's chart code sets window.Plotly when it first loads, and calls that same object's react
  if (window.Plotly) fitLegendsBeforeDrawing(window.Plotly);
  else {
    let plotly;
    Object.defineProperty(window, "Plotly", { configurable: true, enumerable: true, get: () => plotly,
      set: (value) => { plotly = value; if (value) fitLegendsBeforeDrawing(value); } });
  }

  // Every display equation fits its column: one wider than its column is scaled down (to half at most)
  // instead of needing a scrollbar. Measuring forces a layout of the whole page, so an equation is measured when it
  // is new or drawn again, or when it or its column changes size (a tab or expander opening gives it a width), not
  // on every change of the page: that cost a page tens of ms per control change (issue 47).
  const unfitted = new Set();
  const resized = new ResizeObserver((entries) => {
    for (const entry of entries) unfitted.add(entry.target.closest(".katex-display"));
    schedule();
  });
  const fittedKatex = new WeakMap();  // display -> the equation it holds, once observed
  const fitEquations = () => {
    for (const display of document.querySelectorAll(".katex-display")) {
      const katex = display.querySelector(":scope > .katex");
      if (!katex) continue;
      if (fittedKatex.get(display) === katex) {
        // reading before any write costs one layout for them all: one that overflows for a reason no observer
        // saw is fitted again (axe flags a display that scrolls)
        if (display.scrollWidth > display.clientWidth) unfitted.add(display);
        continue;
      }
      if (!fittedKatex.has(display)) resized.observe(display);
      fittedKatex.set(display, katex);
      resized.observe(katex);  // the equation's own width, once its fonts arrive
      unfitted.add(display);
    }
    for (const display of unfitted) {
      const katex = display?.querySelector(":scope > .katex");
      if (!katex || !katex.isConnected || display.clientWidth === 0) continue;
      if (!katex.dataset.fullSize) katex.dataset.fullSize = getComputedStyle(katex).fontSize;
      const full = parseFloat(katex.dataset.fullSize);
      katex.style.fontSize = "";
      let size = full;
      // parts of an equation do not shrink with the font (rules, fixed gaps): shrink again until it fits
      for (let tries = 0; tries < 4 && display.scrollWidth > display.clientWidth && size > full / 2; tries++) {
        size = Math.max(size * (display.clientWidth / display.scrollWidth) * 0.98, full / 2);
        katex.style.fontSize = `${size.toFixed(1)}px`;
      }
    }
    unfitted.clear();
  };
  // A chart's title fits its chart: plotly does not wrap titles, so a long one in a narrow column is scaled
  // down (to half at most) rather than cut at the chart's edge. Plotly redraws the title (its text and font size)
  // on every relayout: a title is measured again when its text or size is not the one fitted last, or its chart
  // changed width, since measuring forces a layout of the page.
  const titleFits = new WeakMap();  // title -> "text|font size" as fitted
  const fitKey = (title) => `${title.textContent}|${title.style.fontSize}`;
  const widened = new ResizeObserver((entries) => {
    for (const entry of entries) {
      const title = entry.target.querySelector(".gtitle");
      if (title) titleFits.delete(title);
    }
    schedule();
  });
  const watchedPlots = new WeakSet();
  const fitTitles = () => {
    for (const plot of document.querySelectorAll(".js-plotly-plot")) {
      if (!watchedPlots.has(plot)) {
        watchedPlots.add(plot);
        widened.observe(plot);
      }
      const title = plot.querySelector(".gtitle");
      if (!title || titleFits.get(title) === fitKey(title)) continue;
      const width = plot.getBoundingClientRect().width;
      if (width === 0) continue;
      if (!title.dataset.fullSize) title.dataset.fullSize = parseFloat(getComputedStyle(title).fontSize);
      const full = parseFloat(title.dataset.fullSize);
      const room = width - (title.getBoundingClientRect().left - plot.getBoundingClientRect().left) - 8;
      let size = parseFloat(getComputedStyle(title).fontSize);
      const needed = title.getBoundingClientRect().width * (full / size);  // the title's width at full size
      size = Math.max(Math.min(full, full * room / needed), full * 0.5);
      title.style.fontSize = `${size.toFixed(1)}px`;
      titleFits.set(title, fitKey(title));
    }
  };
  // Every chart downloads as SVG and its data as CSV as well as PNG: plotly's camera takes the format from the
  // chart's config when clicked, so a button beside it asks for SVG and clicks the camera; the CSV, one row per
  // drawn value (series, x, y, and z for a heatmap's cell), is made in the browser from what plotly drew: the
  // numbers behind a chart for a screen reader, a spreadsheet or a slide.
  // built node by node: with the icon's SVG markup in a string here, st.html dropped this whole script
  const svgIcon = (text) => {
    const ns = "http://www.w3.org/2000/svg";
    const icon = document.createElementNS(ns, "svg");
    icon.setAttribute("viewBox", "0 0 24 24");
    icon.setAttribute("class", "icon");
    icon.setAttribute("width", "16");
    icon.setAttribute("height", "16");
    const label = document.createElementNS(ns, "text");
    for (const [name, value] of [["x", "12"], ["y", "16"], ["text-anchor", "middle"], ["font-size", "9"],
                                 ["font-weight", "700"], ["font-family", "sans-serif"], ["fill", "currentColor"]]) {
      label.setAttribute(name, value);
    }
    label.textContent = text;
    icon.append(label);
    return icon;
  };
  const toolbarButton = (className, title, iconText, onClick) => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = `modebar-btn ${className}`;
    button.rel = "tooltip";
    button.dataset.title = title;
    button.setAttribute("aria-label", title);
    button.append(svgIcon(iconText));
    button.addEventListener("click", onClick);
    return button;
  };
  const addDownloadButtons = () => {
    for (const plot of document.querySelectorAll(".js-plotly-plot")) {
      const camera = plot.querySelector(".modebar-btn[data-title^='Download plot']");
      if (!camera || camera.parentElement.querySelector(".arc-svg")) continue;  // the CSV button comes with it
      camera.after(toolbarButton("arc-svg", "Download plot as SVG", "SVG", () => {
        const options = plot._context.toImageButtonOptions;
        const format = options.format;
        options.format = "svg";
        camera.click();
        options.format = format;
      }));
      camera.before(toolbarButton("arc-csv", "Download data as CSV", "CSV", () => {
        const link = document.createElement("a");
        link.href = URL.createObjectURL(new Blob([csvOf(plot)], { type: "text/csv" }));
        link.download = `${plot._context.toImageButtonOptions.filename || "figure"}.csv`;
        link.click();
        setTimeout(() => URL.revokeObjectURL(link.href), 0);
      }));
    }
  };
  const quoted = (value) => {
    const text = value === null || value === undefined ? "" : String(value);
    return /[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  const csvOf = (plot) => {
    const rows = [["series", "x", "y", "value"]];
    plot._fullData.forEach((trace, i) => {
      const name = trace.name || `trace ${i + 1}`;
      if (trace.type === "heatmap") {
        (trace.z || []).forEach((row, r) => Array.from(row).forEach((z, c) =>
          rows.push([name, trace.x?.[c] ?? c, trace.y?.[r] ?? r, z])));
      } else {
        Array.from(trace.y || []).forEach((y, k) => rows.push([name, trace.x?.[k] ?? k, y, ""]));
      }
    });
    return rows.map(row => row.map(quoted).join(",")).join("\n") + "\n";
  };
  // Streamlit's sectioned navigation puts each section (a div holding its header and its items) straight inside
  // the list, so its items are outside any list to a screen reader (axe: list, listitem; 1,296 serious findings
  // over 36 pages). The list and its sections become plain containers: the links, in order, are what is read.
  const repairNavigation = () => {
    const list = document.querySelector("[data-testid='stSidebarNavItems']");
    if (!list) return;
    for (const part of [list, ...list.children]) {
      if (part.tagName !== "LI" && part.getAttribute("role") !== "none") part.setAttribute("role", "none");
    }
  };
  // Every chart is a figure named by what it shows (ui/alt_text.py, made from the figure's data on the server,
  // sent in layout.meta). Its drawing is hidden from screen readers, which would read ticks one by one; the
  // titles, legend and controls stay.
  const nameFigures = () => {
    for (const plot of document.querySelectorAll(".js-plotly-plot")) {
      const chart = plot.closest("[data-testid='stPlotlyChart']") || plot;
      const alt = plot.layout?.meta?.alt;
      if (alt && chart.getAttribute("aria-label") !== alt) {
        chart.setAttribute("role", "figure");
        chart.setAttribute("aria-label", alt);
      }
      const drawing = plot.querySelector(".main-svg");
      if (drawing && !drawing.hasAttribute("aria-hidden")) drawing.setAttribute("aria-hidden", "true");
      operableByKeyboard(plot);
    }
  };
  // An animated figure's Play and Pause and its step slider are drawn in SVG, out of reach of Tab: each becomes
  // focusable and answers Enter or Space (buttons) and the arrows, Home and End (the slider), as native ones do.
  const pressed = (event) => event.key === "Enter" || event.key === " ";
  const operableByKeyboard = (plot) => {
    for (const button of plot.querySelectorAll(".updatemenu-button:not([tabindex])")) {
      button.setAttribute("tabindex", "0");
      button.setAttribute("role", "button");
      button.setAttribute("aria-label", button.textContent.replace(/^[^A-Za-z]+/, "").trim());
      button.addEventListener("keydown", (event) => {
        if (!pressed(event)) return;
        event.preventDefault();
        button.dispatchEvent(new MouseEvent("click", { bubbles: true }));
      });
    }
    const slider = plot.querySelector(".slider-container");
    const options = plot.layout?.sliders?.[0];
    if (!slider || !options) return;
    const describe = () => {
      const active = plot._fullLayout?.sliders?.[0]?.active ?? options.active ?? 0;
      slider.setAttribute("aria-valuemin", "1");
      slider.setAttribute("aria-valuemax", String(options.steps.length));
      slider.setAttribute("aria-valuenow", String(active + 1));
      slider.setAttribute("aria-valuetext", `${options.currentvalue?.prefix ?? ""}${options.steps[active].label}`);
      return active;
    };
    if (slider.hasAttribute("tabindex")) { describe(); return; }
    slider.setAttribute("tabindex", "0");
    slider.setAttribute("role", "slider");
    slider.setAttribute("aria-label", "Step");
    describe();
    slider.addEventListener("keydown", (event) => {
      const last = options.steps.length - 1;
      const active = describe();
      const next = { ArrowRight: active + 1, ArrowUp: active + 1, ArrowLeft: active - 1, ArrowDown: active - 1,
                     Home: 0, End: last }[event.key];
      if (next === undefined) return;
      event.preventDefault();
      const target = Math.max(0, Math.min(last, next));
      window.Plotly.animate(plot, ...options.steps[target].args);
      window.Plotly.relayout(plot, { "sliders[0].active": target }).then(describe);
    });
  };
  let scheduled = false;
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => {
      scheduled = false;
      fitEquations();
      fitTitles();
      addDownloadButtons();
      repairNavigation();
      nameFigures();
    });
  };
  new MutationObserver(schedule).observe(document.body, { childList: true, subtree: true });

  // A student in a live lecture whose replica went away: Streamlit's frontend reconnects to another, which does not
  // know this tab, and shows what it showed without running anything; this runs the page from its URL there, as
  // Back does, so the new replica knows the tab follows the lecture and moves it with the next change.
  const connectionState = () => document.querySelector("[data-testid='stApp']")
    ?.getAttribute("data-test-connection-state");
  let connection = connectionState();
  const reconnected = () => {
    const now = connectionState();
    if (now === "CONNECTED" && connection && connection !== "CONNECTED"
        && new URLSearchParams(location.search).has("join")) {
      dispatchEvent(new PopStateEvent("popstate"));
    }
    connection = now || connection;
  };
  new MutationObserver(reconnected).observe(document.body,
    { attributes: true, subtree: true, attributeFilter: ["data-test-connection-state"] });
  window.addEventListener("resize", schedule);
  document.fonts.ready.then(schedule);
})();
