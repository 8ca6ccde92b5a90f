// The monitor page in a real browser: Debian's Chromium (/usr/bin/chromium) driven by
// playwright-core, run by `node --test` from scripts/test.
//
// A project is written in a temporary folder as crates/cli/tests/monitor.rs writes one:
// traffic JSONL of three days (1-day windows, a 2-day horizon, so the first window is outside
// it) in two segments, one of them named by hostile markup read from the traffic's metadata;
// the last day is slow, so the latency alert fires, and an SLO reads a criterion a quarter of
// whose answers are ungrounded. The real binary runs `monitor` (which records its report),
// writes the report page to a file, and `oloproof view` serves the store: the index links to
// the monitor page, whose DOM is checked against `monitor --json`: the series charts (a band,
// one point per window, the first dimmed), the SLO rows' states, the fired alerts first with
// their `why`, and no script run from the hostile segment. Screenshots go to
// target/browser-screenshots/.
//
// Environment: OLOPROOF_BIN (default target/ci/oloproof), OLOPROOF_NODE_MODULES (default
// target/browser-tests/node_modules), OLOPROOF_CHROMIUM (default /usr/bin/chromium).

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { assertInert, launchBrowser, newPageOf, runOloproof, shots, startViewer, stopViewer } from "./support.mjs";

const HOSTILE = "<script>window.__xss=1</script>";
const HOSTILE_SEGMENT = `intent=${HOSTILE}`;

const CONFIG = `corpus: corpus.jsonl
evaluators:
  - {type: regex, criterion: no_refusal, must_not_match: '(?i)cannot help'}
  - {type: entity_grounding}
monitor:
  traffic: traffic.jsonl
  segments: [metadata.intent]
  window: {size: 1d, rolling: 2d}
  sampling:
    target_judgments: 20
    seed: 7
    tiers:
      - {evaluators: [no_refusal, entity_grounding], rate: 1.0}
  slos:
    - {criterion: entity_grounding, score_above: 0.5, min_share: 0.8}
  alerts:
    - {type: latency_p95, stage: total, max_ms: 1500}
`;

let tmp, project, viewer, base, context, report, monitorId;

/** Runs the real binary in the project; returns `{stdout, stderr}`, failing on an exit code
 * not in `codes`. */
function oloproof(args, codes = [0]) {
  return runOloproof(project, args, codes);
}

/** Three days from 2026-11-28, `per` traces per intent and day; the last day is slow. Every
 * fourth answer names an order and a carrier its retrieved passage does not. */
function traffic(per) {
  const lines = [];
  for (let d = 0; d < 3; d++) {
    for (const intent of ["refund", HOSTILE]) {
      for (let k = 0; k < per; k++) {
        const n = 10 + (k % 7);
        const answer = k % 13 === 5
          ? "sorry, that one i cannot help with."
          : k % 4 === 0
            ? `Order ${n + 50} shipped on ${(k % 27) + 1} June via Fedex.`
            : `Order ${n} shipped on 3 March.`;
        const total = d === 2 ? 3000 + 10 * k : 400 + 10 * (k % 30);
        const feedback = k % 9 === 4 ? [{ name: "thumbs", value: "down", comment: "wrong date", source: "user" }] : [];
        lines.push(JSON.stringify({
          id: `${intent === "refund" ? "r" : "x"}-${d}-${k}`,
          input: { question: `When did order ${n} ship?` },
          metadata: { intent, "service.version": "1.0.0" },
          retrieval: { candidates: [{ doc_id: "d1", text: `Order ${n} shipped on 3 March.` }] },
          answer,
          usage: { model: "gen-model", input_tokens: 1000, output_tokens: 200 },
          latency_ms: { retrieve: 40, generate: total - 100, total },
          production: {
            trace_id: (d * 1000 + k).toString(16).padStart(31, "0") + (intent === "refund" ? "1" : "2"),
            timestamp: `2026-11-${String(28 + d).padStart(2, "0")}T${String(k % 24).padStart(2, "0")}:${String((k * 7) % 60).padStart(2, "0")}:00Z`,
            source: "otlp",
            feedback,
          },
        }));
      }
    }
  }
  return lines.join("\n") + "\n";
}

async function newPage() {
  return newPageOf(context);
}

/** The page's checks shared by the viewer and the file: series, SLOs, alerts. */
async function assertMonitorPage(page) {
  // One series per criterion and segment; each with a band and one point per window, the
  // window outside the horizon dimmed.
  const windows = report.windows;
  assert.equal(windows.length, 3);
  assert.deepEqual(windows.map((w) => w.in_horizon), [false, true, true]);
  const series = page.locator("section.series");
  assert.equal(await series.count(), 2 * 2);
  for (const segment of ["intent=refund", HOSTILE_SEGMENT]) {
    const section = page.locator(`section.series[data-criterion="entity_grounding"][data-segment="${segment.replace(/"/g, '\\"')}"]`);
    assert.equal(await section.count(), 1, segment);
    const svg = section.locator("svg.series");
    assert.equal(await svg.getAttribute("role"), "img");
    assert.match(await svg.locator("title").first().textContent(), /entity_grounding · intent=/);
    assert.ok((await svg.locator("path.band").count()) >= 1, `no band for ${segment}`);
    assert.equal(await svg.locator("circle.series-point").count(), windows.length);
    assert.equal(await svg.locator("circle.series-point.dim").count(), 1);
    // The dimmed point is the first window's, drawn fainter.
    const opacity = await svg.locator("circle.series-point").first().evaluate((e) => getComputedStyle(e).opacity);
    assert.ok(Number(opacity) < 1, `opacity ${opacity}`);
    // n per window, as the report counts it.
    const ns = await svg.locator("text.n").allTextContents();
    const observed = windows.map((w) => {
      const s = w.segments.find((x) => x.segment === segment);
      return `n=${s.criteria.find((c) => c.summary.criterion === "entity_grounding").summary.observed}`;
    });
    assert.deepEqual(ns, observed);
    // The band spans the interval: its box lies around the points.
    const band = await svg.locator("path.band").first().boundingBox();
    assert.ok(band.height > 0 && band.width > 0, JSON.stringify(band));
    // The table beside it: one row per window, with the counts.
    assert.equal(await section.locator("table tr").count(), 1 + windows.length);
  }
  // Every SLO row with its state, as `--json` decided it.
  const rows = page.locator("table.slos tr.slo");
  assert.equal(await rows.count(), report.slos.length);
  for (let i = 0; i < report.slos.length; i++) {
    const slo = report.slos[i];
    const row = rows.nth(i);
    assert.equal(await row.getAttribute("data-state"), slo.decision.state);
    assert.equal(await row.locator("td").nth(1).textContent(), slo.segment);
    assert.equal(await row.locator("td.state").textContent(), slo.decision.state.replace("_", " "));
  }
  // The fired alerts first, each with its why.
  const fired = report.alerts.filter((a) => a.fired);
  assert.ok(fired.length >= 1, "the slow last day fires the latency alert");
  const alertRows = page.locator("table.alerts tr.alert");
  assert.equal(await alertRows.count(), report.alerts.length);
  for (let i = 0; i < fired.length; i++) {
    const row = alertRows.nth(i);
    assert.equal(await row.getAttribute("data-status"), "fired");
    assert.equal(await row.locator("td.why").textContent(), fired[i].why);
    assert.equal(await row.locator("td").nth(3).textContent(), fired[i].segment);
  }
  assert.equal(await page.locator("#monitor-status").textContent(), "BREACH");
  await assertInert(page);
}

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), "oloproof-browser-monitor-"));
  project = join(tmp, "project");
  mkdirSync(project, { recursive: true });
  mkdirSync(shots, { recursive: true });
  writeFileSync(join(project, "oloproof.yaml"), CONFIG);
  writeFileSync(join(project, "corpus.jsonl"), '{"doc_id": "d1", "metadata": {"tenant": "acme"}}\n');
  writeFileSync(join(project, "traffic.jsonl"), traffic(40));
  const r = oloproof(["monitor", ".", "--json"], [3]);
  report = JSON.parse(r.stdout);
  monitorId = r.stderr.match(/Recorded as (mon_[0-9A-Z]{26})/)[1];
  oloproof(["report", monitorId, "-o", join(tmp, "monitor.html")]);
  [viewer, base] = await startViewer(tmp, project);
  context = await launchBrowser(tmp);
});

after(async () => {
  await context?.close();
  stopViewer(viewer);
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

test("the index lists the monitor report and links to its page", async () => {
  const page = await newPage();
  assert.equal((await page.goto(`${base}/`)).status(), 200);
  const row = page.locator(`#monitors tr[data-monitor="${monitorId}"]`);
  await row.waitFor();
  const cells = await row.locator("td").allTextContents();
  assert.equal(cells[0], monitorId);
  assert.equal(cells[2], "traffic.jsonl");
  assert.equal(cells[3], String(report.windows.length));
  assert.equal(cells[4], String(report.alerts.filter((a) => a.fired).length));
  assert.equal(cells[5], `${report.slos.filter((s) => s.decision.state !== "met").length} of ${report.slos.length}`);
  await Promise.all([page.waitForURL(`${base}/monitors/${monitorId}`), row.locator("a").click()]);
  await assertMonitorPage(page);
  // The tiers' runs link to their pages.
  const runLink = page.locator("#tier-runs a").first();
  assert.equal(await runLink.textContent(), report.sampling.tiers[0].run_id);
  await page.locator("section.series").first().scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(shots, "monitor-full.png"), fullPage: true });
  await page.goto(`${base}/monitors/${monitorId}#series`);
  await page.screenshot({ path: join(shots, "monitor.png") });
  assert.deepEqual(page.problems, []);
});

test("an unknown monitor report is a 404 page", async () => {
  const page = await newPage();
  const resp = await page.goto(`${base}/monitors/mon_${encodeURIComponent(HOSTILE)}`);
  assert.equal(resp.status(), 404);
  assert.match(await page.locator("p.notice").textContent(), /no monitor report `mon_<script>window.__xss=1<\/script>` in this store/);
  await assertInert(page);
});

test("the monitor report opens from disk, inert, with the same page", async () => {
  const page = await newPage();
  await page.goto(pathToFileURL(join(tmp, "monitor.html")).href);
  await assertMonitorPage(page);
  await page.screenshot({ path: join(shots, "monitor-report.png") });
  assert.deepEqual(page.problems, []);
});
