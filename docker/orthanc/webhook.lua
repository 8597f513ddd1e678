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

-- The study's door (docs/dicom-door.md). Orthanc calls ReceivedInstanceFilter
-- for every instance it is about to store, whatever its origin:
--
-- * REST API: only the service's own account (ORTHANC_USERNAME) writes (its
--   uploads, its filed report PDFs); IncomingHttpRequestFilter below already
--   refuses any other account's write, this is the second lock.
-- * A plugin (DICOMweb STOW-RS) or a Lua script: reachable only through the
--   service's account, so it passes.
-- * DICOM (C-STORE): the service decides. The script gathers what Orthanc
--   holds under the instance's UIDs (who sent the stored copy of the same
--   SOPInstanceUID, who sent the study's first instance, whether the study is
--   held for another PatientID) and POSTs it, with the sender's AE title and
--   address, to the service's door (PACS_DOOR_URL, X-Webhook-Secret). The
--   service adds what only it knows (the study's clinic in the archive, the
--   registered devices) and answers {"allow": true|false, "message": ...};
--   it logs and counts its refusals.
--
-- A refusal raises an error: Orthanc then answers the C-STORE with a failure
-- status (0xA700 "Refused: OutOfResources") and logs the message. Returning
-- false would answer "Success" and drop the instance silently, and Orthanc
-- 1.10.1's ReceivedCStoreInstanceFilter never sends the status it is given.
-- Anything that keeps the check from completing (Orthanc's API or the
-- service not answering, an answer that is not {"allow": true}) refuses the
-- same way: nothing is stored unchecked.

local serviceUser = env('ORTHANC_USERNAME', 'pacs')
local viewerUser = env('ORTHANC_VIEWER_USERNAME', 'viewer')
local viewerPassword = env('ORTHANC_VIEWER_PASSWORD', '')
local doorUrl = env('PACS_DOOR_URL', (string.gsub(webhookUrl, '/webhook$', '/door')))

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
  error('webhook.lua: refused instance ' .. tostring(sopInstanceUid) .. ': ' .. why, 0)
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

-- Who stored an instance, as Orthanc recorded it.
local function senderOf(metadata)
  return { Origin = metadata['Origin'], Aet = metadata['RemoteAET'], Ip = metadata['RemoteIP'] }
end

-- The Orthanc id of an instance of each study, kept so that the sender of a
-- held study is read from its metadata alone: listing the study's first
-- series costs as much as the series is long. A kept id whose instance is gone
-- is looked up again. Bounded: forgotten all at once past 10000 studies.
local heldInstances, heldInstanceCount = {}, 0

local function holderOf(studyId, study, sopInstanceUid)
  local kept = heldInstances[studyId]
  local metadata = kept ~= nil and RestApiGet('/instances/' .. kept .. '/metadata?expand', true) or nil
  if metadata ~= nil then
    return senderOf(ParseJson(metadata))
  end
  local series = apiGet('/series/' .. study['Series'][1], sopInstanceUid)
  local instanceId = series['Instances'][1]
  if heldInstanceCount >= 10000 then
    heldInstances, heldInstanceCount = {}, 0
  end
  heldInstances[studyId] = instanceId
  heldInstanceCount = heldInstanceCount + 1
  return senderOf(apiGet('/instances/' .. instanceId .. '/metadata?expand', sopInstanceUid))
end

-- What Orthanc holds under the instance's UIDs: the facts the door decides on.
local function heldFacts(dicom, sopInstanceUid, studyUid)
  local facts = { HeldForOtherPatient = false }
  for _, id in ipairs(lookup(sopInstanceUid, 'Instance', sopInstanceUid)) do
    facts.Replaces = senderOf(apiGet('/instances/' .. id .. '/metadata?expand', sopInstanceUid))
  end
  if studyUid ~= nil then
    for _, id in ipairs(lookup(studyUid, 'Study', sopInstanceUid)) do
      local study = apiGet('/studies/' .. id, sopInstanceUid)
      if ((study['PatientMainDicomTags'] or {})['PatientID'] or '') ~= (dicom['PatientID'] or '') then
        facts.HeldForOtherPatient = true
      end
      if facts.Holder == nil and #(study['Series'] or {}) > 0 then
        facts.Holder = holderOf(id, study, sopInstanceUid)
      end
    end
  end
  return facts
end

-- Allowed answers of the door, kept for DOOR_ANSWER_SECONDS under the facts
-- they were given for (a series of an archived study asks once, not once per
-- instance). Refusals are never kept: each one is logged and counted.
local DOOR_ANSWER_SECONDS = 30
local doorAnswers, doorAnswerCount = {}, 0

local function factsKey(request)
  local function part(sender)
    if sender == nil then
      return '-'
    end
    return tostring(sender.Origin) .. '/' .. normaliseAet(sender.Aet) .. '/' .. normaliseIp(sender.Ip)
  end
  return table.concat({ request.StudyInstanceUID or '-', request.PatientID, part(request.Sender), part(request.Holder),
    part(request.Replaces), tostring(request.HeldForOtherPatient) }, '\n')
end

local function askDoor(request, sopInstanceUid)
  local key = factsKey(request)
  local kept = doorAnswers[key]
  if kept ~= nil and kept > os.time() then
    return
  end
  local headers = { ['Content-Type'] = 'application/json', ['X-Webhook-Secret'] = webhookSecret }
  local ok, answer = pcall(HttpPost, doorUrl, DumpJson(request, true), headers)
  local instance = sopInstanceUid .. ' of study ' .. tostring(request.StudyInstanceUID)
  -- HttpPost gives nil, or an empty body, when the call fails or is not 2xx.
  if not ok or answer == nil or answer == '' then
    refuse(instance, 'the door (' .. doorUrl .. ') gave no answer (down, or the secret refused)')
  end
  local parsed, decision = pcall(ParseJson, answer)
  if not parsed or type(decision) ~= 'table' or decision['allow'] ~= true then
    local message = parsed and type(decision) == 'table' and decision['message'] or 'no decision in the answer'
    refuse(instance, tostring(message))
  end
  if doorAnswerCount >= 10000 then
    doorAnswers, doorAnswerCount = {}, 0
  end
  doorAnswers[key] = os.time() + DOOR_ANSWER_SECONDS
  doorAnswerCount = doorAnswerCount + 1
end

-- A study of one device. When the first instance of a study reaches this Lua
-- state over DICOM, Orthanc holds no study with its StudyInstanceUID and the
-- door lets it in, the script remembers the study: its PatientID and its
-- sender (AE title and address, normalised). Every later instance of that study
-- with the same PatientID from the same sender passes without a lookup or a
-- question: every instance Orthanc holds under those UIDs was sent by that
-- device through this filter, and the door's answer for it cannot change
-- (Orthanc files an instance under its PatientID, StudyInstanceUID,
-- SeriesInstanceUID and SOPInstanceUID, so it can only replace one of the same
-- study and patient). Deleting instances or the study keeps that true.
--
-- Anything else makes the study "shared" for as long as it is remembered, and
-- all its instances get the full check again: an instance from another sender
-- or with another PatientID (marked before its own check, so that it counts
-- even when refused), and any instance of it stored by another way than a
-- C-STORE. A study Orthanc already held when first seen here (after a restart,
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
  if studyMemorySize <= 0 or studyUid == nil then
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
  local sopInstanceUid = dicom['SOPInstanceUID']
  local requestOrigin = origin['RequestOrigin']
  if requestOrigin ~= 'DicomProtocol' then
    if requestOrigin == 'RestApi' and origin['Username'] ~= serviceUser then
      refuse(sopInstanceUid, 'REST write by account "' .. tostring(origin['Username']) .. '", not the service\'s')
    end
    remember(studyUid, SHARED)
    return true
  end
  if type(sopInstanceUid) ~= 'string' or sopInstanceUid == '' then
    -- Orthanc refuses an instance without SOPInstanceUID by itself.
    return true
  end

  local sender = normaliseAet(origin['RemoteAet']) .. '\n' .. normaliseIp(origin['RemoteIp'])
  local patientId = dicom['PatientID'] or ''
  local known = remembered(studyUid or '')
  if known ~= nil and not known.shared and known.sender == sender and known.patientId == patientId then
    return true
  end
  if known ~= nil and not known.shared then
    remember(studyUid, SHARED)
  end

  local request = heldFacts(dicom, sopInstanceUid, studyUid)
  request.StudyInstanceUID = studyUid
  request.PatientID = patientId
  request.Sender = { Origin = 'DicomProtocol', Aet = origin['RemoteAet'], Ip = origin['RemoteIp'] }
  askDoor(request, sopInstanceUid)
  if known == nil and request.Holder == nil then
    remember(studyUid, { sender = sender, patientId = patientId })
  end
  return true
end

-- Orthanc's HTTP server: the service's account does anything; nginx's
-- read-only account (ORTHANC_VIEWER_USERNAME) only GETs what the viewer reads,
-- DICOMweb, and nothing at all while it has no password; anyone else nothing.
-- Orthanc answers 403 to a refused request.
function IncomingHttpRequestFilter(method, uri, ip, username, httpHeaders)
  if username == serviceUser then
    return true
  end
  if username == viewerUser and viewerPassword ~= '' then
    return method == 'GET' and string.sub(uri, 1, 11) == '/dicom-web/'
  end
  return false
end
