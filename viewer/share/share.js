/**
 * A share link's page: POST /api/shares/open with the token of the address (/s/<token>); with the
 * passcode too when the link asks for it (401). Opened, the viewer shows that one study with the
 * viewer token it gave (the viewer's `token` parameter: no study list); when the study has a signed
 * report, the page offers the images and the report (GET /api/shares/report with the same viewer
 * token, shown from a blob), under the study it is (from the open answer). Each opening is one of the link's uses. The API's own message is shown on any refusal (expired, used up, revoked, locked).
 */
(function () {
  'use strict';
  var token = decodeURIComponent(window.location.pathname.replace(/^\/s\//, '').replace(/\/+$/, ''));
  var status = document.getElementById('status');
  var form = document.getElementById('passcode-form');
  var error = document.getElementById('error');
  var submit = document.getElementById('submit');

  function say(message) {
    status.textContent = message;
  }

  var shownName = window.pacsShown.name;
  var shownDate = window.pacsShown.date;

  /** The study the link opens. DOC, the series the signed report is filed in, is offered as the report. */
  function showStudy(study) {
    document.getElementById('shared-patient').textContent = shownName(study.patient_name);
    var modalities = (study.modalities || []).filter(function (m) {
      return m !== 'DOC';
    });
    document.getElementById('shared-study-line').textContent = [shownDate(study.study_date), modalities.join('/'), study.study_description]
      .filter(Boolean)
      .join(' · ');
    document.getElementById('shared-study').hidden = false;
  }

  function refuse(message) {
    error.textContent = message;
    error.hidden = false;
  }

  function open(passcode) {
    submit.disabled = true;
    return fetch('/api/shares/open', {
      method: 'POST',
      credentials: 'omit',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(passcode === undefined ? { token: token } : { token: token, passcode: passcode }),
    })
      .then(function (response) {
        return response.json().then(
          function (body) {
            return { status: response.status, body: body || {} };
          },
          function () {
            return { status: response.status, body: {} };
          },
        );
      })
      .then(function (answer) {
        submit.disabled = false;
        if (answer.status === 200) {
          var viewerUrl =
            '/viewer?StudyInstanceUIDs=' +
            encodeURIComponent(answer.body.study.study_instance_uid) +
            '&token=' +
            encodeURIComponent(answer.body.viewer_token);
          keepForReload(answer.body.study.study_instance_uid, answer.body.viewer_token, answer.body.expires_in);
          form.hidden = true;
          showStudy(answer.body.study);
          if (!answer.body.has_report) {
            say('Opening the viewer…');
            window.location.replace(viewerUrl);
            return;
          }
          offer(viewerUrl, answer.body.viewer_token);
          return;
        }
        var message = answer.body.message || 'The study cannot be opened (' + answer.status + ').';
        if (answer.status === 401) {
          say('This study is protected by a passcode.');
          form.hidden = false;
          if (passcode !== undefined) refuse(message);
          form.passcode.focus();
          return;
        }
        form.hidden = answer.status !== 429;
        if (answer.status === 429) refuse(message);
        else say(message);
      }, function () {
        submit.disabled = false;
        say('The archive cannot be reached. Try again in a moment.');
      });
  }

  /**
   * The viewer token, kept in this tab until it expires: OHIF takes it out of the address bar, and a
   * reload of the viewer reads on with it (viewer/app-config.js) instead of asking for a sign-in.
   */
  function keepForReload(uid, token, seconds) {
    try {
      sessionStorage.setItem(
        'pacs-share-viewer-token',
        JSON.stringify({ uid: uid, token: token, until: Date.now() + seconds * 1000 }),
      );
    } catch (e) {
      // No storage in this tab: a reload of the viewer asks to open the link again.
    }
  }

  /** The images and the signed report, side by side: the report is fetched now, while the token is fresh. */
  function offer(viewerUrl, viewerToken) {
    say('The study has a signed report.');
    document.getElementById('open-images').href = viewerUrl;
    document.getElementById('opened').hidden = false;
    fetch('/api/shares/report', { credentials: 'omit', headers: { 'x-viewer-token': viewerToken } })
      .then(function (response) {
        if (!response.ok) throw new Error(String(response.status));
        return response.blob();
      })
      .then(
        function (pdf) {
          var link = document.getElementById('open-report');
          link.href = URL.createObjectURL(pdf);
          link.hidden = false;
        },
        function () {
          say('The study has a signed report, but it cannot be shown right now; the images can.');
        },
      );
  }

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    error.hidden = true;
    var passcode = form.passcode.value;
    if (!passcode) return refuse('Enter the passcode you were given with the link.');
    open(passcode);
  });

  if (!token) say('This link is incomplete.');
  else open(undefined);
})();
