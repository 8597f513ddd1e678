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
--
-- The full check costs Orthanc two /tools/lookup and a /studies/{id} per
-- instance, under the one lock all Lua callbacks share. Most instances do not
-- need it: those of a study that did not exist when this Lua state first saw
-- it, and that only one device has sent to since (see "A study of one device"
-- below), skip it.

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

-- The full check (1 and 2 above). Raises to refuse; otherwise answers whether
-- Orthanc held a study with this StudyInstanceUID (any patient).
local function checkAgainstArchive(dicom, origin, sopInstanceUid, studyUid)
  local sender = device(origin['RemoteAet'], origin['RemoteIp'])

  for _, id in ipairs(lookup(sopInstanceUid, 'Instance', sopInstanceUid)) do
    local archived = apiGet('/instances/' .. id .. '/metadata?expand', sopInstanceUid)
    if not sentBy(archived, origin) then
      error('webhook.lua: refused to replace archived instance ' .. sopInstanceUid .. ' (sent by '
        .. device(archived['RemoteAET'], archived['RemoteIP'], archived['Origin']) .. ') with one sent by ' .. sender, 0)
    end
  end

  local studyExists = false
  if studyUid ~= nil then
    for _, id in ipairs(lookup(studyUid, 'Study', sopInstanceUid)) do
      studyExists = true
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
  return studyExists
end

-- A study of one device. When the first instance of a study reaches this Lua
-- state over DICOM, passes the full check, and Orthanc holds no study with its
-- StudyInstanceUID, the script remembers the study: its PatientID and its
-- sender (AE title and address, normalised). Every later instance of that study
-- with the same PatientID from the same sender passes without a lookup: every
-- instance Orthanc holds under those UIDs was sent by that device through this
-- filter (Orthanc files an instance under its PatientID, StudyInstanceUID,
-- SeriesInstanceUID and SOPInstanceUID, so it can only replace one of the same
-- study and patient). Deleting instances or the study keeps that true.
--
-- Anything else makes the study "shared" for as long as it is remembered, and
-- all its instances get the full check again: an instance from another sender
-- or with another PatientID (marked before its own check, so that it counts
-- even when refused), and any instance of it stored by another way than a
-- C-STORE (REST upload, modification, plugin: ReceivedInstanceFilter sees every
-- origin). A study Orthanc already held when first seen here (after a restart,
-- or one this state forgot) is never remembered.
--
-- Bounded: two generations of at most PACS_DEVICE_GATE_STUDIES studies each
-- (default 5000); when the current one is full, the previous one is forgotten
-- (its studies fall back to the full check). 0 turns the memory off: do that
-- when several Orthanc nodes share one index, where a node does not see what
-- the others received (docker/README.md).

local studyMemorySize = tonumber(env('PACS_DEVICE_GATE_STUDIES', '5000')) or 5000
local SHARED = { shared = true }
local currentStudies, previousStudies, currentCount = {}, {}, 0

local function remember(studyUid, entry)
  if studyMemorySize <= 0 then
    return
  end
  if currentStudies[studyUid] == nil then
    if currentCount >= studyMemorySize then
      previousStudies, currentStudies, currentCount = currentStudies, {}, 0
    end
    currentCount = currentCount + 1
  end
  currentStudies[studyUid] = entry
  previousStudies[studyUid] = nil
end

local function remembered(studyUid)
  local entry = currentStudies[studyUid]
  if entry == nil then
    entry = previousStudies[studyUid]
    if entry ~= nil then
      remember(studyUid, entry)
    end
  end
  return entry
end

function ReceivedInstanceFilter(dicom, origin, info)
  local studyUid = dicom['StudyInstanceUID']
  if type(studyUid) ~= 'string' or studyUid == '' then
    studyUid = nil
  end
  if origin['RequestOrigin'] ~= 'DicomProtocol' then
    if studyUid ~= nil then
      remember(studyUid, SHARED)
    end
    return true
  end
  local sopInstanceUid = dicom['SOPInstanceUID']
  if type(sopInstanceUid) ~= 'string' or sopInstanceUid == '' then
    -- Orthanc refuses an instance without SOPInstanceUID by itself.
    return true
  end

  local sender = normaliseAet(origin['RemoteAet']) .. '\n' .. normaliseIp(origin['RemoteIp'])
  local patientId = dicom['PatientID'] or ''
  local known = nil
  if studyUid ~= nil then
    known = remembered(studyUid)
  end
  if known ~= nil and not known.shared and known.sender == sender and known.patientId == patientId then
    return true
  end
  if known ~= nil and not known.shared then
    remember(studyUid, SHARED)
  end

  local studyExisted = checkAgainstArchive(dicom, origin, sopInstanceUid, studyUid)
  if known == nil and studyUid ~= nil and not studyExisted then
    remember(studyUid, { sender = sender, patientId = patientId })
  end
  return true
end
