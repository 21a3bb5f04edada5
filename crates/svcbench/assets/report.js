// svcbench report: turns the chart specifications embedded in the page (#svcbench-data, written by
// src/report/charts.rs) into Apache ECharts charts. SVG renderer: crisp at any zoom and in print.
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('svcbench-data').textContent);

  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));

  // Tooltips show the value as stored, to six significant digits.
  const exact = (v) => (v == null || !isFinite(v) ? '–' : v.toLocaleString('en-US', { maximumSignificantDigits: 6 }));

  // Short axis labels: 12k, 1.5M.
  function compact(v) {
    const a = Math.abs(v);
    if (a >= 1e6) return +(v / 1e6).toPrecision(3) + 'M';
    if (a >= 1e4) return +(v / 1e3).toPrecision(3) + 'k';
    return +v.toPrecision(4) + '';
  }

  const axisTitle = (a) => (a.unit && a.unit !== a.name ? `${a.name} (${a.unit})` : a.name);

  function axis(a, isX) {
    const base = {
      name: axisTitle(a),
      nameLocation: 'middle',
      nameGap: isX ? 30 : 52,
      axisLabel: { formatter: (v) => compact(v), hideOverlap: true },
      splitLine: { show: true, lineStyle: { color: '#eaeef2' } },
    };
    switch (a.scale) {
      case 'log2': // connections: ticks at powers of two, bounds snapped to them
        return {
          ...base, type: 'log', logBase: 2,
          min: (e) => Math.pow(2, Math.floor(Math.log2(e.min))),
          max: (e) => Math.pow(2, Math.ceil(Math.log2(e.max))),
        };
      case 'log':
        return { ...base, type: 'log', logBase: 10 };
      case 'category':
        return {
          ...base, type: 'category', data: a.categories, boundaryGap: true,
          nameGap: a.categories.length > 6 ? 62 : 30,
          axisLabel: { interval: 0, rotate: a.categories.length > 6 ? 35 : 0, hideOverlap: false },
        };
      default:
        return { ...base, type: 'value' };
    }
  }

  function tooltip(spec) {
    return {
      trigger: 'item',
      confine: true,
      formatter: (p) => {
        const d = p.data || {};
        const [x, y] = Array.isArray(d.value) ? d.value : [p.dataIndex, d.value];
        const xText = spec.x.scale === 'category' ? esc(spec.x.categories[x] ?? x) : `${exact(x)} ${esc(spec.x.unit)}`;
        let html = `<b>${esc(p.seriesId)}</b><br>`;
        if (spec.kind !== 'bar') html += `step ${esc(d.step)}<br>${esc(spec.x.name)}: ${xText}<br>`;
        html += `${esc(spec.title)}: <b>${exact(y)} ${esc(spec.y.unit)}</b>`;
        if (d.flag) html += `<br><span style="color:#b42318">▲ ${esc(d.flag)}</span>`;
        return html;
      },
    };
  }

  function series(spec) {
    if (spec.kind === 'bar') {
      // One series per run, each with its bar in its own category; stacking keeps the bars centred.
      const n = spec.x.categories.length;
      return spec.series.map((s) => {
        const values = new Array(n).fill(null);
        for (const p of s.points) values[p.x] = { value: p.y, step: p.step };
        // Startup: one bar per run in its own category (stacked to stay centred); errors by kind: the
        // services side by side in every category.
        const stack = spec.id === 'startup' ? 'runs' : undefined;
        return { type: 'bar', name: s.group, id: s.run, stack, barMaxWidth: 36, itemStyle: { color: s.color }, data: values };
      });
    }
    return spec.series.map((s) => ({
      type: 'line',
      name: s.group,
      id: s.run,
      itemStyle: { color: s.color },
      lineStyle: { color: s.color, width: 1.6 },
      symbol: 'circle',
      symbolSize: 5,
      emphasis: { focus: 'series' },
      data: s.points.map((p) => ({
        value: [p.x, p.y],
        step: p.step,
        flag: p.flag,
        // Saturated (or OOM/crash) steps get a large triangle with a dark outline.
        symbol: p.flag ? 'triangle' : 'circle',
        symbolSize: p.flag ? 13 : 5,
        itemStyle: p.flag ? { color: s.color, borderColor: '#1f2328', borderWidth: 1.2 } : undefined,
      })),
    }));
  }

  function option(spec, legendRows) {
    const groups = [...new Set(spec.series.map((s) => s.group))];
    const rotated = spec.x.scale === 'category' && spec.x.categories.length > 6;
    return {
      animation: false,
      // The legend wraps to the rows the page made room for (html.rs), every service named in full.
      grid: { left: 70, right: 24, top: 40 + 22 * (legendRows - 1), bottom: rotated ? 96 : 50 },
      // Series of one service share its name, so one legend entry shows or hides all of its runs.
      legend: { type: 'plain', top: 0, data: groups },
      tooltip: tooltip(spec),
      xAxis: axis(spec.x, true),
      yAxis: axis(spec.y, false),
      series: series(spec),
    };
  }

  const charts = {};
  for (const spec of data.charts) {
    const el = document.getElementById('chart-' + spec.id);
    if (!el) continue;
    const chart = echarts.init(el, null, { renderer: 'svg' });
    chart.setOption(option(spec, Number(el.dataset.legendRows) || 1));
    charts[spec.id] = chart;
  }

  // Hiding a service in one chart hides it in all of them.
  let syncing = false;
  for (const [id, chart] of Object.entries(charts)) {
    chart.on('legendselectchanged', (e) => {
      if (syncing) return;
      syncing = true;
      try {
        for (const [other, c] of Object.entries(charts)) {
          if (other !== id) c.dispatchAction({ type: e.selected[e.name] ? 'legendSelect' : 'legendUnSelect', name: e.name });
        }
      } finally {
        syncing = false;
      }
    });
  }

  window.addEventListener('resize', () => Object.values(charts).forEach((c) => c.resize()));
  // For readers' scripts and svcbench's own browser test.
  window.svcbenchReport = { charts, specs: data.charts };
})();
