// Environment of every DCMTK process we start: Orthanc (it speaks DICOM through DCMTK) and every
// storescu (tests, benchmarks, demo data). docker/orthanc/Dockerfile and docker/docker-compose.yml
// set the same variable; a unit test (src/config/dicom-network-env.spec.ts) keeps those places in
// step with this module.
//
// TCP_NODELAY=1: DCMTK leaves Nagle's algorithm on unless this variable is set (dcmnet, dul.cc).
// A C-STORE exchange is a few small PDUs each way, and with Nagle on every one of them waits for
// the peer's delayed ACK (40 ms on Linux): 300 CT slices of 128 KB in one association took 16-21 s
// with neither side setting it, 4-6 s with only Orthanc's side and about 2 s with both
// (README, Ingestion decisions; bench/README.md).
module.exports = { DICOM_NETWORK_ENV: Object.freeze({ TCP_NODELAY: '1' }) };
