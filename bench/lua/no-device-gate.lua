-- For `npm run bench:ingest -- --lua docker/orthanc/webhook.lua,bench/lua/no-device-gate.lua`: the
-- shipped script with its ReceivedInstanceFilter removed, to measure what the device gate costs.
ReceivedInstanceFilter = nil
