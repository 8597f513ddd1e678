// Node flags of the API process, wherever it is started: `npm run start:prod`, `npm start`
// (scripts/start-all.js), docker/Dockerfile, docker/docker-compose.yml and the benchmarks
// (bench/run.ts, bench/soak.ts). A unit test keeps those places in step with this list.
//
// --max-old-space-size=256: V8 sizes its heap for the machine (4 GB on 24 GB of RAM) and lets the
// old generation fill with dead objects for seconds before a major collection. Capped at 256 MB
// (the live heap is about 50 MB), the API's peak resident size under the benchmark went from
// 330-370 MB to about 220 MB, at the same request rates and latencies (`npm run bench`, the API RSS column).
//
// --no-memory-reducer: after about 30 s without requests V8 shrinks the heap, and the process then
// ran a third slower for the next minutes (the viewer gate: 21-22 µs of CPU a request instead of
// 15-16, measured after 35 s idle, the same build). A server holds its working set; the heap cap
// above bounds what it keeps.
module.exports = { API_NODE_FLAGS: ['--max-old-space-size=256', '--no-memory-reducer'] };
