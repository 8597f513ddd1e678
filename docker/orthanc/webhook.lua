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
-- and its address). Two checks, on instances received over DICOM only
-- (whatever comes through Orthanc's authenticated REST API passes):
--
-- 1. With "OverwriteInstances" true, a C-STORE of an instance Orthanc already
--    holds (same SOPInstanceUID) replaces the stored file: it is let through
--    only from the device that sent the stored instance, i.e. the same calling
--    AE title (trimmed, uppercased) from the same address, as Orthanc recorded
--    them (RemoteAET / RemoteIP metadata).
-- 2. An instance whose StudyInstanceUID Orthanc already holds for another
--    PatientID would make a second study with the same UID, and DICOMweb
--    requests by that UID answer both: it is let through only from the device
--    that sent the archived study (its first instance).
-- New instances of a new study, or joining a study of the same patient, pass.
--
-- A refusal raises an error: Orthanc then answers the C-STORE with a failure
-- status (0xA700 "Refused: OutOfResources") and logs the message, so the
-- sender knows its instance was not stored. Returning false would answer
-- "Success" and drop the instance silently, and Orthanc 1.10.1's
-- ReceivedCStoreInstanceFilter (meant to choose that status) never sends the
-- status it is given. A failure of the check itself (Orthanc's own API not
-- answering) refuses the same way: nothing is stored unchecked, and nothing
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

local function refuse(sopInstanceUid, why)
  error('webhook.lua: refused instance ' .. sopInstanceUid .. ': ' .. why, 0)
end

-- Orthanc's own REST API, parsed; no answer refuses the instance being checked.
local function apiGet(uri, sopInstanceUid)
  local answer = RestApiGet(uri, true)
  if answer == nil then
    refuse(sopInstanceUid, uri .. ' did not answer')
  end
  return ParseJson(answer)
end

-- Orthanc ids of the archived resources of this type whose DICOM UID is `uid`.
local function lookup(uid, resourceType, sopInstanceUid)
  local found = RestApiPost('/tools/lookup', uid, true)
  if found == nil then
    refuse(sopInstanceUid, '/tools/lookup did not answer')
  end
  local ids = {}
  for _, match in ipairs(ParseJson(found)) do
    if match['Type'] == resourceType then
      table.insert(ids, match['ID'])
    end
  end
  return ids
end

local function sentBy(metadata, origin)
  return metadata['Origin'] == 'DicomProtocol'
    and normaliseAet(metadata['RemoteAET']) == normaliseAet(origin['RemoteAet'])
    and normaliseIp(metadata['RemoteIP']) == normaliseIp(origin['RemoteIp'])
end

local function device(aet, ip, requestOrigin)
  local text = 'AE title "' .. tostring(aet) .. '" from ' .. tostring(ip)
  if requestOrigin ~= nil then
    text = text .. ', origin ' .. tostring(requestOrigin)
  end
  return text
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
  local sender = device(origin['RemoteAet'], origin['RemoteIp'])

  for _, id in ipairs(lookup(sopInstanceUid, 'Instance', sopInstanceUid)) do
    local archived = apiGet('/instances/' .. id .. '/metadata?expand', sopInstanceUid)
    if not sentBy(archived, origin) then
      error('webhook.lua: refused to replace archived instance ' .. sopInstanceUid .. ' (sent by '
        .. device(archived['RemoteAET'], archived['RemoteIP'], archived['Origin']) .. ') with one sent by ' .. sender, 0)
    end
  end

  local studyUid = dicom['StudyInstanceUID']
  if type(studyUid) == 'string' and studyUid ~= '' then
    for _, id in ipairs(lookup(studyUid, 'Study', sopInstanceUid)) do
      local study = apiGet('/studies/' .. id, sopInstanceUid)
      local archivedPatient = (study['PatientMainDicomTags'] or {})['PatientID'] or ''
      if archivedPatient ~= (dicom['PatientID'] or '') and #(study['Series'] or {}) > 0 then
        local series = apiGet('/series/' .. study['Series'][1], sopInstanceUid)
        local first = apiGet('/instances/' .. series['Instances'][1] .. '/metadata?expand', sopInstanceUid)
        if not sentBy(first, origin) then
          refuse(sopInstanceUid, 'study ' .. studyUid .. ' is archived for another patient ID (sent by '
            .. device(first['RemoteAET'], first['RemoteIP'], first['Origin']) .. '); this one was sent by ' .. sender)
        end
      end
    end
  end
  return true
end
