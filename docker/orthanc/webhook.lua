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
