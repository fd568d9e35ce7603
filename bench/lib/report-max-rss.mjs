// Preloaded into a measured child (`node --import …/report-max-rss.mjs …`): when the
// process exits, its peak resident set size (KiB) and CPU time (µs), from getrusage,
// are written as JSON to $BENCH_MAX_RSS_FILE. Exact even for short-lived processes
// that /proc sampling would miss.
import { writeFileSync } from 'node:fs';

const file = process.env.BENCH_MAX_RSS_FILE;
if (file !== undefined && file !== '') {
  process.on('exit', () => {
    const u = process.resourceUsage();
    writeFileSync(
      file,
      JSON.stringify({ maxRSS: u.maxRSS, cpuMicros: u.userCPUTime + u.systemCPUTime }),
    );
  });
}
