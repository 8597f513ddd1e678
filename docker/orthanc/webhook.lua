-- Tells the archive service that Orthanc considers a study stable
-- ("StableAge" seconds without a new instance). Orthanc calls OnStableStudy
-- again when late instances arrive, so the service re-indexes the study.
--
-- Environment (read once, when Orthanc loads the script):
--   PACS_WEBHOOK_URL     full URL of the webhook (default http://api:3000/api/imgsrv/webhook)
--   PACS_WEBHOOK_SECRET  shared secret, sent as X-Webhook-Secret
--
-- Orthanc never retries a failed call; the service recovers missed studies from
-- Orthanc's /changes feed (StableStudy events).

local function env(name, default)
  local value = os.getenv(name)
  if value == nil or value == '' then
    return default
  end
  return value
end

local webhookUrl = env('PACS_WEBHOOK_URL', 'http://api:3000/api/imgsrv/webhook')
local webhookSecret = env('PACS_WEBHOOK_SECRET', '')

if webhookSecret == '' then
  print('webhook.lua: PACS_WEBHOOK_SECRET is not set, the service will refuse the webhook')
end

function OnStableStudy(studyId, tags, metadata)
  local body = DumpJson({ ID = studyId }, true)
  -- HttpPost sets no Content-Type of its own: without this header the body
  -- would travel as application/x-www-form-urlencoded.
  local headers = {
    ['Content-Type'] = 'application/json',
    ['X-Webhook-Secret'] = webhookSecret,
  }

  -- A failing POST must never break Orthanc's Lua engine: catch everything.
  local ok, answer = pcall(HttpPost, webhookUrl, body, headers)
  if not ok then
    print('webhook.lua: POST ' .. webhookUrl .. ' failed for study ' .. studyId .. ': ' .. tostring(answer))
  elseif answer == nil then
    print('webhook.lua: POST ' .. webhookUrl .. ' got no successful answer for study ' .. studyId)
  end
end

-- Archived images cannot be replaced by a stranger (a device is its AE title
-- and its address). With "OverwriteInstances" true, a C-STORE of an instance
-- Orthanc already holds (same SOPInstanceUID) replaces the stored file: this
-- filter lets such a replacement through only from the device that sent the
-- stored instance, i.e. the same calling AE title (trimmed, uppercased) from
-- the same address, as Orthanc recorded them (RemoteAET / RemoteIP metadata).
-- New instances pass; so does whatever comes through Orthanc's authenticated
-- REST API (RequestOrigin other than DicomProtocol).
--
-- A refusal raises an error: Orthanc then answers the C-STORE with a failure
-- status (0xA700 "Refused: OutOfResources") and logs the message, so the
-- sender knows its instance was not stored. Returning false would answer
-- "Success" and drop the instance silently, and Orthanc 1.10.1's
-- ReceivedCStoreInstanceFilter (meant to choose that status) never sends the
-- status it is given. A failure of the check itself (Orthanc's own API not
-- answering) refuses the same way: nothing is replaced unchecked, and nothing
-- is refused without a trace.

local function normaliseAet(aet)
  local trimmed = string.gsub(tostring(aet or ''), '^%s*(.-)%s*$', '%1')
  return string.upper(trimmed)
end

-- Orthanc writes an IPv4 peer as 127.0.0.1, but an IPv4-mapped IPv6 form
-- (::ffff:127.0.0.1) names the same device.
local function normaliseIp(ip)
  local lowered = string.lower(tostring(ip or ''))
  return (string.gsub(lowered, '^::ffff:(%d+%.%d+%.%d+%.%d+)$', '%1'))
end

-- The reception metadata of every archived instance with this SOPInstanceUID
-- (several when other patients' studies reuse it).
local function archivedCopies(sopInstanceUid)
  local found = RestApiPost('/tools/lookup', sopInstanceUid, true)
  if found == nil then
    error('webhook.lua: refused instance ' .. sopInstanceUid .. ': /tools/lookup did not answer', 0)
  end
  local copies = {}
  for _, match in ipairs(ParseJson(found)) do
    if match['Type'] == 'Instance' then
      local metadata = RestApiGet('/instances/' .. match['ID'] .. '/metadata?expand', true)
      if metadata == nil then
        error('webhook.lua: refused instance ' .. sopInstanceUid .. ': its archived copy ' .. match['ID'] .. ' has no readable metadata', 0)
      end
      table.insert(copies, ParseJson(metadata))
    end
  end
  return copies
end

function ReceivedInstanceFilter(dicom, origin, info)
  if origin['RequestOrigin'] ~= 'DicomProtocol' then
    return true
  end
  local sopInstanceUid = dicom['SOPInstanceUID']
  if type(sopInstanceUid) ~= 'string' or sopInstanceUid == '' then
    -- Orthanc refuses an instance without SOPInstanceUID by itself.
    return true
  end
  for _, archived in ipairs(archivedCopies(sopInstanceUid)) do
    local sameDevice = archived['Origin'] == 'DicomProtocol'
      and normaliseAet(archived['RemoteAET']) == normaliseAet(origin['RemoteAet'])
      and normaliseIp(archived['RemoteIP']) == normaliseIp(origin['RemoteIp'])
    if not sameDevice then
      error('webhook.lua: refused to replace archived instance ' .. sopInstanceUid
        .. ' (sent by AE title "' .. tostring(archived['RemoteAET']) .. '" from ' .. tostring(archived['RemoteIP'])
        .. ', origin ' .. tostring(archived['Origin']) .. ') with one sent by AE title "'
        .. tostring(origin['RemoteAet']) .. '" from ' .. tostring(origin['RemoteIp']), 0)
    end
  end
  return true
end
