// Opens an svcbench HTML report in headless Chromium and prints what tests/report.rs asserts on, as JSON:
// console errors, requests that left the file, each chart's series, the summary table's exact figures,
// a real hover over a point (tooltip text) and a real click on a legend entry; writes a full-page screenshot.
// Usage: node check.mjs REPORT.html SCREENSHOT.png
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [html, screenshot] = process.argv.slice(2);
if (!html || !screenshot) {
  console.error('usage: node check.mjs REPORT.html SCREENSHOT.png');
  process.exit(2);
}

const profile = mkdtempSync(join(tmpdir(), 'svcbench-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1400, height: 1000 },
  deviceScaleFactor: 1,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
});
const out = { consoleErrors: [], externalRequests: [], charts: [], summary: [], hover: null, legend: null };
try {
  const page = context.pages()[0] || (await context.newPage());
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') out.consoleErrors.push(`${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => out.consoleErrors.push(`pageerror: ${e.message}`));
  page.on('request', (r) => { if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) out.externalRequests.push(r.url()); });
  await page.goto(pathToFileURL(resolve(html)).href, { waitUntil: 'load' });
  await page.waitForFunction(() => window.svcbenchReport !== undefined, null, { timeout: 10000 });

  out.charts = await page.evaluate(() => {
    return [...document.querySelectorAll('div.chart')].map((el) => {
      const chart = echarts.getInstanceByDom(el);
      const opt = chart ? chart.getOption() : { series: [], legend: [{ data: [] }] };
      const rect = el.getBoundingClientRect();
      return {
        id: el.dataset.chart,
        declaredSeries: Number(el.dataset.series),
        series: opt.series.map((s) => ({ id: s.id, name: s.name, points: s.data.filter((d) => d != null).length })),
        legend: (opt.legend[0].data || []).map((d) => (typeof d === 'string' ? d : d.name)),
        drawnPaths: el.querySelectorAll('svg path').length,
        width: rect.width,
        height: rect.height,
      };
    });
  });

  out.summary = await page.evaluate(() =>
    [...document.querySelectorAll('#summary tbody tr')].map((tr) => {
      const cells = {};
      for (const td of tr.querySelectorAll('td[data-metric]')) {
        const d = td.dataset;
        cells[d.metric] = {
          // The shown median (a range, when there is one, is a second line of its own).
          text: (td.querySelector('.v') || td).textContent,
          range: td.querySelector('.range')?.textContent ?? null,
          median: d.median !== undefined ? Number(d.median) : null,
          min: d.min !== undefined ? Number(d.min) : null,
          max: d.max !== undefined ? Number(d.max) : null,
          n: d.n !== undefined ? Number(d.n) : null,
          value: d.value !== undefined && d.value !== '' ? Number(d.value) : null,
        };
      }
      return { service: tr.dataset.service, cells };
    }),
  );

  // Hover: move the real mouse onto the last point of the last run in the throughput chart (the last
  // series is drawn on top, so its tooltip wins should another run's point lie on the same pixel).
  const target = await page.evaluate(() => {
    const el = document.querySelector('div.chart[data-chart="rps"]') || document.querySelector('div.chart');
    el.scrollIntoView({ block: 'center' });
    const chart = echarts.getInstanceByDom(el);
    const all = chart.getOption().series;
    const index = all.length - 1;
    const s = all[index];
    const last = s.data[s.data.length - 1];
    const [px, py] = chart.convertToPixel({ seriesIndex: index }, last.value);
    const r = el.getBoundingClientRect();
    return { chart: el.dataset.chart, run: s.id, y: last.value[1], x: r.left + px, yPx: r.top + py };
  });
  await page.mouse.move(target.x, target.yPx);
  await page.waitForTimeout(400);
  const tip = await page.evaluate((id) => {
    const el = document.querySelector(`div.chart[data-chart="${id}"]`);
    // ECharts puts its tooltip as a div inside the chart container.
    const divs = [...el.querySelectorAll('div')].filter((d) => d.textContent.includes('#') && getComputedStyle(d).display !== 'none');
    return divs.map((d) => d.innerText).join('\n');
  }, target.chart);
  out.hover = { chart: target.chart, run: target.run, y: target.y, tooltip: tip };

  // Legend: click the first service's entry in the throughput chart; every chart must hide it.
  const name = out.charts.find((c) => c.id === target.chart).legend[0];
  const clickAt = async () => {
    const pos = await page.evaluate(([id, n]) => {
      const el = document.querySelector(`div.chart[data-chart="${id}"]`);
      const text = [...el.querySelectorAll('svg text')].find((t) => t.textContent === n);
      const r = text.getBoundingClientRect();
      return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
    }, [target.chart, name]);
    await page.mouse.click(pos.x, pos.y);
    await page.waitForTimeout(200);
  };
  const selectedEverywhere = () =>
    page.evaluate((n) => Object.fromEntries(Object.entries(window.svcbenchReport.charts).map(([id, c]) => {
      const sel = c.getOption().legend[0].selected || {};
      return [id, sel[n] !== false];
    })), name);
  await clickAt();
  const hidden = await selectedEverywhere();
  await clickAt();
  const shown = await selectedEverywhere();
  out.legend = { name, afterFirstClick: hidden, afterSecondClick: shown };

  await page.mouse.move(0, 0);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: screenshot, fullPage: true });
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify(out));
