// End-to-end tests of `oloproof view` and of the HTML report in a real browser: Debian's
// Chromium (/usr/bin/chromium) driven by playwright-core, run by `node --test` from scripts/test.
//
// A store is built in a temporary folder from examples/support_rag with the real binary: a run,
// a second run with a larger token budget, their comparison under the example's policy, a
// gold-context diagnosis, and a recorded (Ragas) run whose answers are hostile markup. The
// comparison also judges the answers in pairs (`--pairwise`) with a scripted judge served by
// this process (OpenAI wire format; it prefers the longer answer in either position). The
// viewer is started on a free port; every page type is loaded and checked on the DOM. A second
// store is built from tests/systems/pipeline_show (rewrite, two lanes with RRF, a tenant filter, a
// rerank, hops): two runs (the second keeps the fused order) and their comparison, served by a
// second viewer, for the pipeline flow of the case page, the run page's per-stage latency and
// the comparison's stage deltas.
// Screenshots go to target/browser-screenshots/ (and to docs/images/ with
// OLOPROOF_UPDATE_SCREENSHOTS=1).
//
// Environment: OLOPROOF_BIN (default target/ci/oloproof), OLOPROOF_NODE_MODULES (default
// target/browser-tests/node_modules), OLOPROOF_CHROMIUM (default /usr/bin/chromium).

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import {
  assertInert,
  bin,
  launchBrowser,
  newPageOf,
  repo,
  runOloproof,
  shots,
  startViewer as startViewerIn,
  stopViewer,
  updateDocs,
} from "./support.mjs";

const XSS_SCRIPT = "<script>window.__xss=1</script>";
const XSS_IMG = '<img src=x onerror="window.__xss=1">';

let tmp, project, viewer, base, context, judge, pipeProject, pipeViewer, pipeBase;
const ids = {};
const summaries = {};

/** Runs the real binary; returns stdout, failing on an exit code not in `codes`. */
function oloproof(args, codes = [0], env = {}) {
  return runOloproof(tmp, args, codes, env).stdout;
}

/** Runs the real binary without blocking this process (the scripted judge must answer). */
function oloproofAsync(args, codes = [0]) {
  return new Promise((resolveOut, reject) => {
    const child = spawn(bin, args, { cwd: tmp, env: { ...process.env, CI: "true", RUST_LOG: "" } });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("error", reject);
    child.on("exit", (code) => {
      if (codes.includes(code)) resolveOut(out);
      else reject(new Error(`oloproof ${args.join(" ")} exited ${code}\n${out}\n${err}`));
    });
  });
}

/** A pairwise judge on a free port: the longer of `Answer A` and `Answer B` wins, else a tie. */
function startJudge() {
  return new Promise((resolveUrl) => {
    judge = createServer((req, res) => {
      // Like a real OpenAI-compatible server: only chat completions are served (a client of a
      // loopback server asks `GET /props` for llama.cpp's slot count, and takes a 404).
      if (req.method !== "POST" || !req.url.endsWith("/chat/completions")) {
        req.resume();
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
        return;
      }
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        const request = JSON.parse(body);
        const user = request.messages[1].content;
        const [, a = "", b = ""] = user.match(/Answer A: ([\s\S]*)\n\nAnswer B: ([\s\S]*)$/) ?? [];
        const winner = a.length > b.length ? "A" : b.length > a.length ? "B" : "tie";
        const content = JSON.stringify({ reason: `the longer answer, ${winner}`, winner });
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({
          id: "chatcmpl-browser", object: "chat.completion", created: 0, model: request.model,
          choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
          usage: { prompt_tokens: 50, completion_tokens: 10, total_tokens: 60 },
        }));
      });
    });
    judge.listen(0, "127.0.0.1", () => resolveUrl(`http://127.0.0.1:${judge.address().port}/v1`));
  });
}

/** Starts `oloproof view DIR` from the temporary folder. */
function startViewer(dir) {
  return startViewerIn(tmp, dir);
}

/** A page that records console errors (a CSP violation is one) and page errors. */
async function newPage() {
  return newPageOf(context);
}

async function screenshot(page, name) {
  await page.screenshot({ path: join(shots, `${name}-full.png`), fullPage: true });
  await page.screenshot({ path: join(shots, `${name}.png`) });
  if (updateDocs) await page.screenshot({ path: join(repo, "docs/images", `${name}.png`) });
}

/** The report's way of writing a criterion's value (`value_cell`). */
function valueCell(c) {
  if (c.value === null || c.value === undefined) return "—";
  return c.kind === "mean" ? c.value.toFixed(3) : `${(c.value * 100).toFixed(1)}%`;
}

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), "oloproof-browser-"));
  project = join(tmp, "project");
  cpSync(join(repo, "examples/support_rag"), project, {
    recursive: true,
    filter: (src) => !/(\.oloproof|__pycache__)$/.test(src),
  });
  mkdirSync(shots, { recursive: true });
  const judgeUrl = await startJudge();
  appendFileSync(
    join(project, "oloproof.yaml"),
    `judges:\n  longer: {provider: openai, base_url: "${judgeUrl}", model: browser-judge, max_retries: 0, timeout_s: 10}\n`,
  );
  summaries.base = JSON.parse(oloproof(["run", project, "--json"]));
  summaries.budget = JSON.parse(oloproof(["run", project, "--set", "system.rag.token_budget=120", "--json"]));
  ids.base = summaries.base.run_id;
  ids.budget = summaries.budget.run_id;
  const comparison = JSON.parse(
    await oloproofAsync(["compare", ids.budget, ids.base, "--policy", join(repo, "examples/support_rag/compare.yaml"), "--dir", project, "--pairwise", "longer", "--json"], [0, 3]),
  );
  summaries.pairwise = comparison.pairwise;
  ids.comparison = comparison.id;
  const diagnosis = JSON.parse(
    oloproof(["diagnose", ids.base, "--intervention", "gold-context", "--criterion", "answer_correct", "--dir", project, "--json"]),
  );
  ids.diagnosis = diagnosis.id;
  const records = [
    { id: "xss", user_input: "What happens to markup?", retrieved_contexts: ["Refunds for annual plans are issued within 14 days of an approved request."], response: `${XSS_SCRIPT} ${XSS_IMG}`, reference: "14 days", reference_contexts: ["Refunds for annual plans are issued within 14 days of an approved request."] },
    { id: "plain", user_input: "How long do refunds take for annual plans?", retrieved_contexts: ["Refunds for annual plans are issued within 14 days of an approved request."], response: "Within 14 days.", reference: "14 days", reference_contexts: ["Refunds for annual plans are issued within 14 days of an approved request."] },
  ];
  writeFileSync(join(tmp, "hostile.jsonl"), records.map((r) => JSON.stringify(r)).join("\n") + "\n");
  summaries.hostile = JSON.parse(oloproof(["run", project, "--dataset", join(tmp, "hostile.jsonl"), "--json"]));
  ids.hostile = summaries.hostile.run_id;
  oloproof(["report", ids.base, "--dir", project, "-o", join(tmp, "run.html")]);
  oloproof(["report", ids.hostile, "--dir", project, "-o", join(tmp, "hostile.html")]);
  oloproof(["report", ids.comparison, "--dir", project, "-o", join(tmp, "comparison.html")]);
  pipeProject = join(tmp, "pipeline");
  cpSync(join(repo, "tests/systems/pipeline_show"), pipeProject, {
    recursive: true,
    filter: (src) => !/(\.oloproof|__pycache__)$/.test(src),
  });
  writeFileSync(join(pipeProject, "compare.yaml"), "decisions:\n  - {name: recall, criterion: recall_at_2, kind: non_inferiority, margin_points: 50}\n");
  summaries.pipe = JSON.parse(oloproof(["run", pipeProject, "--json"]));
  summaries.pipeKeep = JSON.parse(oloproof(["run", pipeProject, "--json"], [0], { OLOPROOF_TEST_NO_RERANK_BIAS: "1" }));
  ids.pipe = summaries.pipe.run_id;
  ids.pipeKeep = summaries.pipeKeep.run_id;
  const pipeComparison = JSON.parse(
    oloproof(["compare", ids.pipeKeep, ids.pipe, "--policy", join(pipeProject, "compare.yaml"), "--dir", pipeProject, "--json"]),
  );
  summaries.pipeComparison = pipeComparison;
  ids.pipeComparison = pipeComparison.id;
  oloproof(["report", ids.pipe, "--dir", pipeProject, "-o", join(tmp, "pipeline.html")]);
  [viewer, base] = await startViewer(project);
  [pipeViewer, pipeBase] = await startViewer(pipeProject);
  context = await launchBrowser(tmp);
});

after(async () => {
  await context?.close();
  judge?.close();
  stopViewer(viewer);
  stopViewer(pipeViewer);
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

test("the runs list shows every run with its headline numbers", async () => {
  const page = await newPage();
  const resp = await page.goto(`${base}/`);
  assert.equal(resp.status(), 200);
  assert.match(resp.headers()["content-security-policy"], /default-src 'none'; style-src 'self'/);
  assert.equal(resp.headers()["x-content-type-options"], "nosniff");
  for (const id of [ids.base, ids.budget, ids.hostile]) {
    await page.locator(`#runs tr[data-run="${id}"]`).waitFor();
  }
  const chips = await page.locator(`#runs tr[data-run="${ids.base}"] .chip`).allTextContents();
  assert.deepEqual(
    chips,
    summaries.base.criteria.map((c) => `${c.criterion} ${valueCell(c)}`),
  );
  assert.equal(await page.locator("#comparisons tr").count(), 2);
  assert.equal(await page.locator("#diagnoses tr").count(), 2);
  // The stylesheet applied (a CSP-blocked sheet would leave the browser defaults).
  assert.equal(await page.locator("header.top").evaluate((e) => getComputedStyle(e).position), "sticky");
  await screenshot(page, "runs");
  assert.deepEqual(page.problems, []);
});

test("the run page's table equals `oloproof run --json`", async () => {
  const page = await newPage();
  assert.equal((await page.goto(`${base}/runs/${ids.base}`)).status(), 200);
  const rows = page.locator("#criteria tr[data-criterion]");
  assert.equal(await rows.count(), summaries.base.criteria.length);
  for (const c of summaries.base.criteria) {
    const row = page.locator(`#criteria tr[data-criterion="${c.criterion}"]`);
    const cells = row.locator("td");
    assert.equal(Number(await cells.nth(1).getAttribute("data-value")), c.value);
    assert.equal((await cells.nth(1).textContent()).trim(), valueCell(c));
    assert.equal(Number(await cells.nth(2).getAttribute("data-lo")), c.interval[0]);
    assert.equal(Number(await cells.nth(2).getAttribute("data-hi")), c.interval[1]);
    assert.equal(Number(await cells.nth(3).getAttribute("data-observed")), c.observed);
    assert.equal(Number(await cells.nth(3).getAttribute("data-missing")), c.missing);
    assert.equal(Number(await cells.nth(3).getAttribute("data-excluded")), c.excluded);
  }
  assert.equal(await page.locator("svg.chart").first().isVisible(), true);
  await screenshot(page, "run");
  // Server-side filters: failing answers only, through the form.
  await page.selectOption("form.filters select[name=criterion]", "answer_correct");
  await page.selectOption("form.filters select[name=outcome]", "fail");
  await page.click("form.filters button");
  await page.waitForURL(/outcome=fail/);
  const failed = summaries.base.criteria.find((c) => c.criterion === "answer_correct");
  const expected = failed.observed - failed.passed;
  assert.equal(await page.locator("#case-table tr[data-case]").count(), expected);
  assert.equal(await page.locator("#case-count").textContent(), `${expected} of ${summaries.base.cases}`);
  assert.deepEqual(page.problems, []);
});

test("from a failing case in the comparison to its trace", async () => {
  const page = await newPage();
  assert.equal((await page.goto(`${base}/comparisons/${ids.comparison}`)).status(), 200);
  assert.equal(await page.locator("svg.chart").first().isVisible(), true);
  // Changed cases come first, regressions before improvements.
  const directions = await page.locator("#case-table tr[data-direction]").evaluateAll((rows) => rows.map((r) => r.dataset.direction));
  const order = { regression: 0, other: 1, improvement: 2, unchanged: 3 };
  assert.deepEqual(directions, [...directions].sort((a, b) => order[a] - order[b]));
  await screenshot(page, "comparison");
  // A case the candidate fails: its candidate cell (4th) holds a fail pill.
  const row = page.locator("#case-table tr[data-case]").filter({ has: page.locator("td:nth-child(4) .pill.fail") }).first();
  const caseId = await row.getAttribute("data-case");
  assert.ok(caseId, "the candidate fails some case");
  await row.locator("td:nth-child(4) a.trace").click();
  await page.waitForURL(`${base}/runs/${ids.budget}/cases/${encodeURIComponent(caseId)}`);
  assert.equal((await page.locator("h1").textContent()).trim(), `Case ${caseId}`);
  await page.locator("text=Retrieved candidates").first().waitFor();
  const verdict = page.locator("section.case table tr", { hasText: "answer_correct" }).locator("td").nth(1);
  assert.match(await verdict.textContent(), /^(fail|missing)/);
  await screenshot(page, "case");
  assert.deepEqual(page.problems, []);
});

test("the diagnosis page lists the labels and filters by label", async () => {
  const page = await newPage();
  assert.equal((await page.goto(`${base}/diagnoses/${ids.diagnosis}`)).status(), 200);
  const labels = await page.locator("#case-table tr[data-label]").evaluateAll((rows) => rows.map((r) => r.dataset.label));
  assert.ok(labels.length > 0);
  await screenshot(page, "diagnosis");
  const label = labels[0];
  await page.selectOption("form.filters select[name=label]", label);
  await page.click("form.filters button");
  await page.waitForURL(/label=/);
  const shown = await page.locator("#case-table tr[data-label]").evaluateAll((rows) => rows.map((r) => r.dataset.label));
  assert.deepEqual(shown, labels.filter((l) => l === label));
  // Each labelled case links to its trace in the diagnosed run.
  const href = await page.locator("#case-table tr[data-label] a").first().getAttribute("href");
  assert.ok(href.startsWith(`/runs/${ids.base}/cases/`), href);
  assert.deepEqual(page.problems, []);
});

test("hostile answers render as text in the viewer", async () => {
  const page = await newPage();
  assert.equal((await page.goto(`${base}/runs/${ids.hostile}/cases/xss`)).status(), 200);
  const answer = page.locator("section.case pre", { hasText: "window.__xss" }).first();
  assert.equal((await answer.textContent()).trim(), `${XSS_SCRIPT} ${XSS_IMG}`);
  await assertInert(page);
  assert.equal((await page.goto(`${base}/runs/${ids.hostile}`)).status(), 200);
  await assertInert(page);
  assert.equal((await page.goto(`${base}/runs/no_such_run`)).status(), 404);
  assert.equal((await page.locator("h1").textContent()).trim(), "Not found");
  assert.deepEqual(page.problems.filter((p) => !p.includes("404")), []);
});

test("the HTML report opens from disk, inert, with the same numbers", async () => {
  const page = await newPage();
  await page.goto(pathToFileURL(join(tmp, "run.html")).href);
  assert.equal((await page.locator("h1").textContent()).trim(), "Oloproof run report");
  for (const c of summaries.base.criteria) {
    const cells = page.locator("table tr", { has: page.locator(`td:first-child:text-is("${c.criterion}")`) }).first().locator("td");
    assert.equal((await cells.nth(1).textContent()).trim(), valueCell(c));
  }
  await screenshot(page, "report");
  await page.goto(pathToFileURL(join(tmp, "hostile.html")).href);
  await page.locator("pre", { hasText: XSS_SCRIPT }).first().waitFor();
  await assertInert(page);
  await page.goto(pathToFileURL(join(tmp, "comparison.html")).href);
  assert.equal((await page.locator("h1").textContent()).trim(), "Oloproof comparison report");
  await assertInert(page);
  assert.equal(await page.locator("#pairwise table.pairwise-cases tr[data-case]").count(), summaries.pairwise.cases.length);
  assert.deepEqual(page.problems, []);
});

test("the comparison shows the pairwise judgments case by case", async () => {
  const page = await newPage();
  assert.equal((await page.goto(`${base}/comparisons/${ids.comparison}`)).status(), 200);
  const section = page.locator("#pairwise");
  assert.equal(await section.isVisible(), true);
  assert.match(await section.locator("h2").textContent(), /Pairwise preference \(judge longer: browser-judge · pairwise@2 · both orders\) · report only/);
  const t = summaries.pairwise.tally;
  assert.match(await section.locator("ul li").first().textContent(), new RegExp(`${t.wins} wins · ${t.losses} losses · ${t.ties} ties`));
  const rows = section.locator("table.pairwise-cases tr[data-case]");
  assert.equal(await rows.count(), summaries.pairwise.cases.length);
  // Every stored case is a row with its outcome; a judged one shows both calls' choices.
  for (const c of summaries.pairwise.cases) {
    const row = section.locator(`tr[data-case="${c.case_id}"]`);
    assert.equal(await row.getAttribute("data-outcome"), c.outcome);
    if (c.calls?.length) {
      assert.equal((await row.locator("td:nth-child(3)").textContent()).trim(), c.first);
      assert.match(await row.locator("td:nth-child(4)").textContent(), new RegExp(`^${c.calls[0].preferred}`));
    }
  }
  await section.scrollIntoViewIfNeeded();
  await screenshot(page, "comparison-pairwise");
  assert.deepEqual(page.problems, []);
});

test("the case page shows the pipeline as a flow with positions and stage times", async () => {
  const page = await newPage();
  assert.equal((await page.goto(`${pipeBase}/runs/${ids.pipe}/cases/a`)).status(), 200);
  const flow = page.locator("section.case .flow");
  assert.equal(await flow.isVisible(), true);
  assert.deepEqual(
    await flow.locator(".flow-line .flow-stage").allTextContents(),
    ["rewrite", "lanes (bm25, tri)", "fusion (rrf k=60)", "filter", "rerank", "hops", "context", "answer"],
  );
  const stages = await flow.locator(".stage").evaluateAll((els) => els.map((e) => e.dataset.stage));
  assert.deepEqual([...new Set(stages)], ["rewrite", "lane", "fusion", "filter", "rerank", "hop", "answer"]);
  // The gold d1 is first in both lanes and in the fused list; the length rerank moves it to 3.
  const fused = flow.locator(".stage[data-stage=fusion] li[data-doc=d1]");
  assert.match(await fused.textContent(), /^1\.d1 score 0\.0656 · bm25 #1 · tri #1 ★ relevant$/);
  const reranked = flow.locator(".stage[data-stage=rerank] li[data-doc=d1]");
  assert.equal((await reranked.locator(".move").textContent()).trim(), "↓2");
  assert.equal(await reranked.locator(".move").evaluate((e) => getComputedStyle(e).color), "rgb(180, 35, 42)");
  assert.equal(await reranked.locator(".relevant").count(), 1);
  assert.match(await flow.locator(".stage[data-stage=filter]").textContent(), /predicate: tenant = "acme"/);
  // One bar per timed stage, total above it.
  const labels = await flow.locator(".stage-latency svg text.label").allTextContents();
  assert.deepEqual(labels, ["rewrite", "retrieve", "fuse", "rerank", "generate"]);
  assert.match(await flow.locator(".stage-latency").textContent(), /total \d+\.\d ms/);
  // The stage blocks sit side by side (the grid applied).
  assert.equal(await flow.locator(".stages").evaluate((e) => getComputedStyle(e).display), "grid");
  await flow.evaluate((e) => { e.scrollIntoView(); window.scrollBy(0, -64); });
  await screenshot(page, "case-pipeline");
  assert.deepEqual(page.problems, []);
});

test("the pipeline run page breaks latency down by stage", async () => {
  const page = await newPage();
  assert.equal((await page.goto(`${pipeBase}/runs/${ids.pipe}`)).status(), 200);
  const heading = page.locator("h2", { hasText: "Stage latency" });
  const rows = await page.locator("h2:text-is('Stage latency') ~ table").first().locator("tr").evaluateAll(
    (trs) => trs.slice(1).map((tr) => [...tr.querySelectorAll("td")].slice(0, 2).map((td) => td.textContent)),
  );
  // Every stage that ran, in pipeline order, with the cases that timed it.
  const stages = ["rewrite", "retrieve", "fuse", "rerank", "generate"];
  assert.deepEqual(Object.keys(summaries.pipe.latency_ms).sort(), [...stages].sort());
  assert.deepEqual(rows, stages.map((s) => [s, String(summaries.pipe.latency_ms[s].n)]));
  const bars = await page.locator("h2:text-is('Stage latency') + svg text.label").allTextContents();
  assert.deepEqual(bars, stages.flatMap((s) => ["p50", "p95", "p99"].map((q) => `${s} ${q}`)));
  await heading.evaluate((e) => { e.scrollIntoView(); window.scrollBy(0, -64); });
  await screenshot(page, "run-pipeline");
  assert.deepEqual(page.problems, []);
});

test("the comparison of two pipeline runs shows stage deltas", async () => {
  const page = await newPage();
  assert.equal((await page.goto(`${pipeBase}/comparisons/${ids.pipeComparison}`)).status(), 200);
  const section = page.locator("#stage-deltas");
  assert.equal(await section.isVisible(), true);
  const recall = summaries.pipeComparison.stages.recall;
  const rows = section.locator("table").nth(1).locator("tr");
  assert.equal(await rows.count(), recall.length + 1);
  for (const [i, r] of recall.entries()) {
    const cells = await rows.nth(i + 1).locator("td").allTextContents();
    assert.deepEqual(cells.slice(0, 3), [`recall@${r.k} ${r.stage}`, String(r.paired), `${r.baseline.toFixed(3)} → ${r.candidate.toFixed(3)}`]);
  }
  const latency = await section.locator("table").first().locator("tr td:first-child").allTextContents();
  assert.deepEqual(latency, summaries.pipeComparison.stages.latency.map((l) => l.stage));
  await section.evaluate((e) => { e.scrollIntoView(); window.scrollBy(0, -64); });
  await screenshot(page, "comparison-stages");
  // The HTML report of the run has the same flow, from disk.
  await page.goto(pathToFileURL(join(tmp, "pipeline.html")).href);
  assert.ok((await page.locator(".flow").count()) > 0);
  await assertInert(page);
  assert.deepEqual(page.problems, []);
});
