// What the browser tests share: the paths and environment they read, the real binary, the
// viewer process, a headless Chromium and the checks every page passes.
//
// Environment: OLOPROOF_BIN (default target/ci/oloproof), OLOPROOF_NODE_MODULES (default
// target/browser-tests/node_modules), OLOPROOF_CHROMIUM (default /usr/bin/chromium),
// OLOPROOF_UPDATE_SCREENSHOTS=1 (also write docs/images/).

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const bin = resolve(repo, process.env.OLOPROOF_BIN ?? "target/ci/oloproof");
const nodeModules = resolve(repo, process.env.OLOPROOF_NODE_MODULES ?? "target/browser-tests/node_modules");
const chromiumPath = process.env.OLOPROOF_CHROMIUM ?? "/usr/bin/chromium";
export const shots = join(repo, "target/browser-screenshots");
export const updateDocs = process.env.OLOPROOF_UPDATE_SCREENSHOTS === "1";
const { chromium } = createRequire(join(nodeModules, "noop.js"))("playwright-core");

/** Runs the real binary in `cwd`; returns spawnSync's result, failing on an exit code not in
 * `codes`. */
export function runOloproof(cwd, args, codes = [0], env = {}) {
  const r = spawnSync(bin, args, { cwd, encoding: "utf8", env: { ...process.env, CI: "true", RUST_LOG: "", ...env } });
  assert.ok(codes.includes(r.status), `oloproof ${args.join(" ")} exited ${r.status}\n${r.stdout}\n${r.stderr}`);
  return r;
}

/** Starts `oloproof view DIR` from `cwd`; its first stdout line names the URL. Resolves with
 * `[process, url]`. */
export function startViewer(cwd, dir) {
  return new Promise((resolveUrl, reject) => {
    const proc = spawn(bin, ["view", dir, "--port", "0"], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    proc.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/http:\/\/127\.0\.0\.1:\d+\//);
      if (m) resolveUrl([proc, m[0].replace(/\/$/, "")]);
    });
    proc.stderr.on("data", (d) => (err += d));
    proc.on("exit", (code) => reject(new Error(`oloproof view exited ${code}: ${out}${err}`)));
  });
}

/** Stops a viewer started by `startViewer`. */
export function stopViewer(proc) {
  if (proc && proc.exitCode === null) {
    proc.removeAllListeners("exit");
    proc.kill("SIGINT");
  }
}

/** A headless Chromium (Debian's) with its profile under `tmp`, kept off the network. */
export function launchBrowser(tmp) {
  return chromium.launchPersistentContext(join(tmp, "chromium-profile"), {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
}

/** A page of `context` that records console errors (a CSP violation is one) and page errors
 * in `page.problems`. */
export async function newPageOf(context) {
  const page = await context.newPage();
  page.problems = [];
  page.on("console", (m) => {
    if (m.type() === "error") page.problems.push(m.text());
  });
  page.on("pageerror", (e) => page.problems.push(String(e)));
  return page;
}

/** No script ran, no script element exists, no element carries an event handler, and (unless
 * the page draws them) no image came from the stored markup. */
export async function assertInert(page, { images = false } = {}) {
  assert.equal(await page.evaluate(() => typeof window.__xss), "undefined");
  assert.equal(await page.locator("script").count(), 0);
  if (!images) assert.equal(await page.locator("img").count(), 0);
  assert.equal(await page.evaluate(() => [...document.querySelectorAll("*")].filter((e) => [...e.attributes].some((a) => a.name.startsWith("on"))).length), 0);
}
