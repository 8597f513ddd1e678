// Environment of every DCMTK process we start: Orthanc (it speaks DICOM through DCMTK) and every
// storescu (tests, benchmarks, demo data). docker/orthanc/Dockerfile and docker/docker-compose.yml
// set the same variable; a unit test (src/config/dicom-network-env.spec.ts) keeps those places in
// step with this module.
//
// TCP_NODELAY=1: DCMTK leaves Nagle's algorithm on unless this variable is set (dcmnet, dul.cc).
// A C-STORE exchange is a few small PDUs each way, and with Nagle on every one of them waits for
// the peer's delayed ACK (about 40 ms on Linux): 300 CT slices of 128 KB in one association to Orthanc
// 1.10 took 18-21 s with neither side setting it, 3.6-6.5 s with Orthanc's side only and 1.3-3.4 s
// with both, on a loaded 2-core machine (docs/ingestion.md, `npm run bench:ingest -- --parts nodelay`).
module.exports = { DICOM_NETWORK_ENV: Object.freeze({ TCP_NODELAY: '1' }) };
