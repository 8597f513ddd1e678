/**
 * The report page. Everything goes through the API of the same origin with the session cookie:
 * the worklist is GET /api/studies?report_status=..., a study's reports GET /api/studies/{id}/reports,
 * a draft is created on the first keystroke and then saved as the doctor types (PATCH with the
 * version it was made on: a stale save is refused by the API with 409 and said here, never
 * overwritten), the preview and the signed report are the API's PDFs. Signing asks first (a signed
 * report is never changed, only amended); a draft can be discarded (DELETE). "Send the study on": the
 * study's ZIP (GET /api/studies/{id}/archive, a plain link: the cookie authenticates) and its share
 * links (POST/GET /api/studies/{id}/shares, DELETE .../shares/{shareId} to revoke); a new link's
 * token is in the API's answer only, so the page shows the whole link once, to copy.
 */
(function () {
  'use strict';
  var SECTIONS = ['indication', 'technique', 'findings', 'impression'];
  var SAVE_DELAY_MS = 800;
  /** sessionStorage key of the text not yet saved when the session ended (see signInAgain). */
  var KEPT = 'pacs-report-unsaved';
  var $ = function (id) { return document.getElementById(id); };

  var state = {
    study: null,
    reports: [],
    /** The draft being edited ({id, version, kind}) or null. */
    draft: null,
    presets: [],
    timer: null,
    saving: null,
    dirty: false,
    stale: false,
    /** The signed-in user's id: text kept when the session ended comes back only to them. */
    user: null,
  };

  function api(method, url, body) {
    var init = { method: method, credentials: 'same-origin', headers: {} };
    if (body !== undefined) {
      init.headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    return fetch(url, init).then(function (response) {
      if (response.status === 401) {
        signInAgain();
        throw new Error('signed out');
      }
      var parse = response.status === 204 ? Promise.resolve(null) : response.json().catch(function () { return null; });
      return parse.then(function (data) { return { status: response.status, body: data }; });
    });
  }

  /**
   * The session ended (expired, signed out elsewhere): the text not yet saved is kept in this tab
   * (sessionStorage) and the sign-in page comes back here, where restoreUnsaved puts it back.
   */
  function signInAgain() {
    clearTimeout(state.timer);
    if (state.study && !state.stale && !$('findings').readOnly) {
      var values = sectionsOfForm();
      var saved = state.draft || {};
      var unsaved = SECTIONS.some(function (name) { return values[name] !== (saved[name] || ''); });
      if (unsaved) {
        sessionStorage.setItem(KEPT, JSON.stringify({
          user: state.user,
          study: state.study.id,
          draft: state.draft ? state.draft.id : null,
          version: state.draft ? state.draft.version : null,
          values: values,
        }));
      }
    }
    state.dirty = false;
    window.location.assign('/login?next=' + encodeURIComponent(window.location.pathname + window.location.search));
  }

  /** The text kept by signInAgain, back in the form and saved on the version it was written on. */
  function restoreUnsaved() {
    var kept = null;
    try { kept = JSON.parse(sessionStorage.getItem(KEPT)); } catch (e) { kept = null; }
    sessionStorage.removeItem(KEPT);
    // Another account signed in at this screen: the text is not theirs to save.
    if (!kept || !kept.values || !state.study || kept.study !== state.study.id || !kept.user || kept.user !== state.user) return;
    SECTIONS.forEach(function (name) { $(name).value = kept.values[name] || ''; });
    // The draft changed hands meanwhile (created, signed or deleted elsewhere): said, never overwritten.
    if ((state.draft ? state.draft.id : null) !== kept.draft) return conflict();
    if (state.draft) state.draft.version = kept.version;
    scheduleSave();
  }

  function conflict() {
    state.stale = true;
    state.dirty = false;
    var message = $('conflict');
    text(message, 'Not saved: this report was changed elsewhere (another tab or another doctor) since you opened it. ' +
      'Your last changes were NOT saved and nothing was overwritten. Reload the current text to continue.');
    message.hidden = false;
    $('reload').hidden = false;
    status('');
  }

  function text(node, value) { node.textContent = value == null ? '' : String(value); return node; }
  function el(tag, className, value) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (value !== undefined) text(node, value);
    return node;
  }
  var shownName = window.pacsShown.name;
  var shownDate = window.pacsShown.date;
  function two(n) { return (n < 10 ? '0' : '') + n; }
  /* A moment (ISO 8601) as the study dates read, in the browser's zone and 24 h: "29/11/2026 17:11". */
  function shownDateTime(iso) {
    if (!iso) return '';
    var d = new Date(iso);
    return two(d.getDate()) + '/' + two(d.getMonth() + 1) + '/' + d.getFullYear() + ' ' + two(d.getHours()) + ':' + two(d.getMinutes());
  }
  function status(message) { text($('status'), message); }
  function firstError(body) {
    if (body && body.errors) {
      var keys = Object.keys(body.errors);
      if (keys.length) return body.errors[keys[0]][0];
    }
    return (body && (body.message || body.error)) || 'The archive refused the request.';
  }

  /*
   * The worklist: studies pending or with a draft, newest study first, the first `worklistPages`
   * pages of each (15 a page); "More studies" adds a page of each while either has more.
   */
  var worklistPages = 1;
  function loadWorklist() {
    var asked = [];
    ['pending', 'draft'].forEach(function (s) {
      for (var page = 1; page <= worklistPages; page++) asked.push(api('GET', '/api/studies?report_status=' + s + '&page=' + page));
    });
    return Promise.all(asked).then(function (answers) {
      var byId = {};
      var more = false;
      answers.forEach(function (a) {
        if (a.status !== 200) return;
        // A study moved from pending to draft between two pages is listed once.
        a.body.data.forEach(function (s) { byId[s.id] = s; });
        if (a.body.current_page === worklistPages && a.body.current_page < a.body.last_page) more = true;
      });
      var studies = Object.keys(byId).map(function (id) { return byId[id]; });
      $('worklist-more').hidden = !more;
      studies.sort(function (a, b) {
        return (b.study_date || '').localeCompare(a.study_date || '') || (b.created_at || '').localeCompare(a.created_at || '');
      });
      var list = $('worklist');
      list.textContent = '';
      studies.forEach(function (s) {
        var item = el('li');
        item.dataset.studyId = s.id;
        if (state.study && state.study.id === s.id) item.className = 'current';
        var open = el('a', 'name', shownName(s.patient_name));
        open.href = '/reports?study=' + encodeURIComponent(s.id);
        open.addEventListener('click', function (event) {
          event.preventDefault();
          history.pushState(null, '', open.href);
          selectStudy(s.id);
        });
        item.appendChild(open);
        var meta = el('span', 'meta', [shownDate(s.study_date), (s.modalities || []).join('/'), s.study_description].filter(Boolean).join(' · '));
        if (s.report_status === 'draft') meta.appendChild(el('span', 'state', 'draft'));
        item.appendChild(meta);
        var viewer = el('a', 'viewer', 'Open in the viewer');
        viewer.href = '/viewer?StudyInstanceUIDs=' + encodeURIComponent(s.study_instance_uid);
        viewer.target = '_blank';
        viewer.rel = 'noopener';
        item.appendChild(viewer);
        list.appendChild(item);
      });
      $('worklist-empty').hidden = studies.length > 0;
    });
  }

  function sectionsOfForm() {
    var values = {};
    SECTIONS.forEach(function (name) { values[name] = $(name).value; });
    return values;
  }

  function fillForm(report, editable) {
    SECTIONS.forEach(function (name) {
      $(name).value = report ? report[name] || '' : '';
      $(name).readOnly = !editable;
    });
    $('preset').disabled = !editable;
    $('apply-preset').disabled = !editable;
  }

  function pdfUrl(report) {
    return '/api/studies/' + state.study.id + '/reports/' + report.id + '/pdf';
  }

  function render() {
    var reports = state.reports;
    var final = reports.filter(function (r) { return r.kind === 'report' && r.status === 'final'; })[0] || null;
    state.draft = reports.filter(function (r) { return r.status === 'draft'; })[0] || null;
    var signed = $('signed');
    signed.textContent = '';
    reports.filter(function (r) { return r.status === 'final'; }).forEach(function (r) {
      var item = el('li');
      item.appendChild(text(el('span'), (r.kind === 'report' ? 'Report' : 'Addendum') + ' signed by ' + r.signed_by.name +
        (r.signed_by.crm ? ' (CRM ' + r.signed_by.crm + ')' : '') + ' on ' + shownDateTime(r.signed_at) + ' — '));
      var link = el('a', 'signed-pdf', 'signed PDF');
      link.href = pdfUrl(r.kind === 'report' ? r : final || r);
      link.target = '_blank';
      link.rel = 'noopener';
      item.appendChild(link);
      signed.appendChild(item);
    });
    $('history').hidden = !final;
    $('conflict').hidden = true;
    $('reload').hidden = true;
    state.stale = false;
    if (state.draft) {
      text($('report-title'), state.draft.kind === 'addendum' ? 'Addendum (draft)' : 'Report (draft)');
      fillForm(state.draft, true);
      status('Draft saved (version ' + state.draft.version + ').');
    } else if (final) {
      text($('report-title'), 'Report (signed)');
      fillForm(final, false);
      status('');
    } else {
      text($('report-title'), 'Report');
      fillForm(null, true);
      status('No report yet: start typing.');
    }
    $('preview').hidden = !state.draft;
    if (state.draft) $('preview').href = pdfUrl(state.draft);
    $('sign').hidden = !state.draft && !!final;
    $('add-addendum').hidden = !final || !!state.draft;
    $('discard').hidden = !state.draft;
  }

  function loadReports() {
    return api('GET', '/api/studies/' + state.study.id + '/reports').then(function (answer) {
      if (answer.status !== 200) throw new Error(firstError(answer.body));
      state.reports = answer.body;
      render();
    });
  }

  function loadPresets() {
    var modality = (state.study.modalities || []).filter(function (m) { return m !== 'DOC'; })[0] || '';
    var query = '?unit_id=' + encodeURIComponent(state.study.unit_id) + (modality ? '&modality=' + encodeURIComponent(modality) : '');
    return api('GET', '/api/tenant/report-presets' + query).then(function (answer) {
      state.presets = answer.status === 200 ? answer.body.data : [];
      var select = $('preset');
      select.length = 1;
      state.presets.forEach(function (p) {
        var option = el('option', null, p.name + (p.modality ? ' (' + p.modality + ')' : ''));
        option.value = p.id;
        select.appendChild(option);
      });
    });
  }

  function selectStudy(id) {
    return flush().then(function () {
      return api('GET', '/api/studies/' + encodeURIComponent(id));
    }).then(function (answer) {
      if (answer.status !== 200) {
        $('editor').hidden = true;
        $('nothing').hidden = false;
        text($('nothing'), answer.status === 404 ? 'That study is not one you can see.' : firstError(answer.body));
        return;
      }
      state.study = answer.body;
      $('editor').hidden = false;
      $('nothing').hidden = true;
      text($('patient'), shownName(state.study.patient_name));
      text($('study-line'), [
        'ID ' + state.study.patient_id,
        shownDate(state.study.study_date),
        (state.study.modalities || []).join('/'),
        state.study.study_description,
        state.study.accession_number ? 'Acc. ' + state.study.accession_number : null,
      ].filter(Boolean).join(' · '));
      $('open-viewer').href = '/viewer?StudyInstanceUIDs=' + encodeURIComponent(state.study.study_instance_uid);
      Array.prototype.forEach.call($('worklist').children, function (li) {
        li.className = li.dataset.studyId === id ? 'current' : '';
      });
      return Promise.all([loadReports(), loadPresets(), resetSendOn()]);
    });
  }

  /* Saving: the first keystroke creates the draft, later ones PATCH it with its version. */
  function scheduleSave() {
    if (state.stale) return;
    state.dirty = true;
    status('Unsaved changes…');
    clearTimeout(state.timer);
    state.timer = setTimeout(function () { save(); }, SAVE_DELAY_MS);
  }

  function save() {
    clearTimeout(state.timer);
    if (state.saving) return state.saving.then(function () { return state.dirty ? save() : undefined; });
    if (!state.dirty || state.stale || !state.study) return Promise.resolve();
    state.dirty = false;
    var values = sectionsOfForm();
    var studyId = state.study.id;
    var request = state.draft
      ? api('PATCH', '/api/studies/' + studyId + '/reports/' + state.draft.id, Object.assign({ version: state.draft.version }, values))
      : api('POST', '/api/studies/' + studyId + '/reports', values);
    status('Saving…');
    state.saving = request.then(function (answer) {
      if (answer.status === 200 || answer.status === 201) {
        var known = state.reports.filter(function (r) { return r.id !== answer.body.id; });
        state.reports = known.concat([answer.body]);
        state.draft = answer.body;
        $('preview').href = pdfUrl(answer.body);
        $('preview').hidden = false;
        $('discard').hidden = false;
        status(state.dirty ? 'Unsaved changes…' : 'Draft saved (version ' + answer.body.version + ').');
        if (answer.status === 201) loadWorklist();
      } else if (answer.status === 409) {
        conflict();
      } else {
        state.dirty = true;
        status('Not saved: ' + firstError(answer.body));
      }
    }, function () {
      state.dirty = true;
      status('Not saved: the archive cannot be reached. Retrying when you type again.');
    }).then(function () { state.saving = null; });
    return state.saving;
  }

  function flush() { return state.study ? save() : Promise.resolve(); }

  function sign() {
    $('sign').disabled = true;
    flush().then(function () {
      // What is on screen is what gets signed: not while the last changes are unsaved (said in the status).
      if (state.stale || state.dirty) return;
      if (!state.draft) { status('Write the report before signing.'); return; }
      var what = state.draft.kind === 'addendum' ? 'addendum' : 'report';
      if (!window.confirm('Sign this ' + what + '? A signed ' + what + ' cannot be changed, only amended with an addendum.')) {
        status('Not signed.');
        return;
      }
      status('Signing…');
      return api('POST', '/api/studies/' + state.study.id + '/reports/' + state.draft.id + '/sign', { version: state.draft.version })
        .then(function (answer) {
          if (answer.status === 200) {
            return loadReports().then(function () {
              status('Signed. The PDF is kept and filed with the study’s images.');
              loadWorklist();
            });
          }
          status('Not signed: ' + firstError(answer.body));
        });
    }).then(function () { $('sign').disabled = false; }, function () { $('sign').disabled = false; });
  }

  /** Deletes the draft (the API's DELETE: a draft only), after asking; unsaved changes go with it. */
  function discard() {
    if (!state.draft) return;
    var what = state.draft.kind === 'addendum' ? 'addendum' : 'report';
    if (!window.confirm('Discard this draft ' + what + '? Its text is deleted and cannot be brought back.')) return;
    clearTimeout(state.timer);
    state.dirty = false;
    $('discard').disabled = true;
    (state.saving || Promise.resolve()).then(function () {
      if (!state.draft) return;
      return api('DELETE', '/api/studies/' + state.study.id + '/reports/' + state.draft.id).then(function (answer) {
        if (answer.status === 204 || answer.status === 404) {
          return loadReports().then(function () {
            status(answer.status === 204 ? 'Draft discarded.' : 'This draft was already deleted elsewhere.');
            loadWorklist();
          });
        }
        status('Not discarded: ' + firstError(answer.body));
      });
    }).then(function () { $('discard').disabled = false; }, function () { $('discard').disabled = false; });
  }

  /* Sending the study on: its ZIP and its share links. */
  var SHARE_FIELDS = { expires_in_hours: 'share-hours', max_uses: 'share-uses', passcode: 'share-passcode', note: 'share-note' };

  function showShareErrors(errors) {
    Object.keys(SHARE_FIELDS).forEach(function (field) {
      var node = $(SHARE_FIELDS[field] + '-error');
      var messages = errors && errors[field];
      text(node, messages ? messages.join(' ') : '');
      node.hidden = !messages;
      $(SHARE_FIELDS[field]).setAttribute('aria-invalid', messages ? 'true' : 'false');
    });
  }

  function resetSendOn() {
    $('download').href = '/api/studies/' + encodeURIComponent(state.study.id) + '/archive';
    $('share-form').reset();
    showShareErrors(null);
    $('share-error').hidden = true;
    $('share-created').hidden = true;
    $('share-link').value = '';
    text($('share-copy-status'), '');
    return loadShares();
  }

  function shareState(share) {
    if (share.revoked_at) return 'revoked ' + shownDateTime(share.revoked_at);
    if (new Date(share.expires_at).getTime() <= Date.now()) return 'expired';
    if (share.uses >= share.max_uses) return 'used up';
    return 'active';
  }

  function loadShares() {
    var studyId = state.study.id;
    return api('GET', '/api/studies/' + encodeURIComponent(studyId) + '/shares').then(function (answer) {
      if (!state.study || state.study.id !== studyId) return;
      var shares = answer.status === 200 ? answer.body : [];
      var body = $('shares').tBodies[0];
      body.textContent = '';
      shares.forEach(function (share) {
        var row = el('tr');
        var now = shareState(share);
        if (now !== 'active') row.className = 'inactive';
        [
          share.note || '—',
          share.created_by ? share.created_by.name : '—',
          shownDateTime(share.expires_at),
          share.uses + ' / ' + share.max_uses,
          share.has_passcode ? 'yes' : 'no',
          now,
        ].forEach(function (value) { row.appendChild(el('td', null, value)); });
        var action = el('td');
        if (!share.revoked_at) {
          var revoke = el('button', 'revoke secondary', 'Revoke');
          revoke.type = 'button';
          revoke.addEventListener('click', function () { revokeShare(share, revoke); });
          action.appendChild(revoke);
        }
        row.appendChild(action);
        body.appendChild(row);
      });
      $('shares').hidden = !shares.length;
      $('shares-empty').hidden = shares.length > 0;
      if (answer.status !== 200) {
        $('shares-empty').hidden = false;
        text($('shares-empty'), 'The study’s links cannot be listed: ' + firstError(answer.body));
      } else {
        text($('shares-empty'), 'No share links yet.');
      }
    });
  }

  function revokeShare(share, button) {
    var whom = share.note ? ' (' + share.note + ')' : '';
    if (!window.confirm('Revoke this link' + whom + '? It stops opening the study at once, also for whoever has it open now.')) return;
    button.disabled = true;
    api('DELETE', '/api/studies/' + encodeURIComponent(state.study.id) + '/shares/' + encodeURIComponent(share.id)).then(function (answer) {
      if (answer.status !== 204) window.alert('Not revoked: ' + firstError(answer.body));
      return loadShares();
    }).then(function () { button.disabled = false; }, function () { button.disabled = false; });
  }

  /** An empty number field is left to the API's default; anything else is sent for the API to judge. */
  function shareBody() {
    var body = {};
    [['expires_in_hours', 'share-hours'], ['max_uses', 'share-uses']].forEach(function (pair) {
      var value = $(pair[1]).value.trim();
      if (value !== '') body[pair[0]] = Number(value);
    });
    if ($('share-passcode').value !== '') body.passcode = $('share-passcode').value;
    if ($('share-note').value.trim() !== '') body.note = $('share-note').value.trim();
    return body;
  }

  function createShare(event) {
    event.preventDefault();
    showShareErrors(null);
    $('share-error').hidden = true;
    $('share-create').disabled = true;
    api('POST', '/api/studies/' + encodeURIComponent(state.study.id) + '/shares', shareBody()).then(function (answer) {
      if (answer.status === 201) {
        var share = answer.body;
        $('share-link').value = window.location.origin + share.url;
        text($('share-created-meta'), 'Expires ' + shownDateTime(share.expires_at) + ' · ' + share.uses + ' of ' + share.max_uses +
          ' uses · ' + (share.has_passcode ? 'with a passcode: give it to the recipient separately' : 'no passcode'));
        text($('share-copy-status'), '');
        $('share-created').hidden = false;
        $('share-form').reset();
        $('share-link').focus();
        $('share-link').select();
        return loadShares();
      }
      if (answer.status === 422 && answer.body && answer.body.errors) return showShareErrors(answer.body.errors);
      text($('share-error'), 'No link: ' + firstError(answer.body));
      $('share-error').hidden = false;
    }).then(function () { $('share-create').disabled = false; }, function () { $('share-create').disabled = false; });
  }

  /** The clipboard API where the browser allows it; else the link stays selected, to copy by hand. */
  function copyShare() {
    var link = $('share-link');
    link.focus();
    link.select();
    var said = function (message) { text($('share-copy-status'), message); };
    var manually = function () { said('Copy it by hand: the link is selected (Ctrl+C or ⌘C).'); };
    if (!navigator.clipboard || !navigator.clipboard.writeText) return manually();
    navigator.clipboard.writeText(link.value).then(function () { said('Copied.'); }, manually);
  }

  function applyPreset() {
    var preset = state.presets.filter(function (p) { return p.id === $('preset').value; })[0];
    if (!preset) return;
    SECTIONS.forEach(function (name) {
      if (!preset[name]) return;
      var area = $(name);
      area.value = area.value.trim() ? area.value.replace(/\s+$/, '') + '\n' + preset[name] : preset[name];
    });
    scheduleSave();
  }

  function addAddendum() {
    var final = state.reports.filter(function (r) { return r.kind === 'report' && r.status === 'final'; })[0];
    if (!final) return;
    api('POST', '/api/studies/' + state.study.id + '/reports/' + final.id + '/addenda', {}).then(function (answer) {
      if (answer.status === 201) return loadReports();
      status('No addendum: ' + firstError(answer.body));
    });
  }

  SECTIONS.forEach(function (name) { $(name).addEventListener('input', scheduleSave); });
  $('worklist-more').addEventListener('click', function () {
    worklistPages += 1;
    loadWorklist();
  });
  $('apply-preset').addEventListener('click', applyPreset);
  $('sign').addEventListener('click', sign);
  $('add-addendum').addEventListener('click', addAddendum);
  $('discard').addEventListener('click', discard);
  $('share-form').addEventListener('submit', createShare);
  $('share-copy').addEventListener('click', copyShare);
  $('reload').addEventListener('click', function () { loadReports(); });
  $('report').addEventListener('submit', function (event) { event.preventDefault(); });
  $('sign-out').addEventListener('click', function () {
    api('POST', '/api/logout').then(function () { window.location.replace('/login'); }, function () { window.location.replace('/login'); });
  });
  window.addEventListener('beforeunload', function (event) {
    if (state.dirty) event.preventDefault();
  });
  window.addEventListener('popstate', function () {
    var id = new URLSearchParams(window.location.search).get('study');
    if (id) selectStudy(id);
  });

  /**
   * The API's id of a study named by its Study Instance UID (the viewer's link): the study search
   * gives its Accession Number and Patient ID, and the list searched by the first, else the second,
   * holds the study (both within the caller's scope), on whichever page.
   */
  function studyIdOfUid(uid) {
    return api('GET', '/api/dicom-web/studies?StudyInstanceUID=' + encodeURIComponent(uid)).then(function (answer) {
      var found = answer.status === 200 && answer.body && answer.body[0];
      var keys = ['00080050', '00100020'].map(function (tag) {
        return found && found[tag] && found[tag].Value && found[tag].Value[0];
      }).filter(Boolean);
      return searchFor(keys, 1);
    });
    function searchFor(keys, page) {
      if (!keys.length) return null;
      return api('GET', '/api/studies?search=' + encodeURIComponent(keys[0]) + '&page=' + page).then(function (list) {
        if (list.status !== 200) return searchFor(keys.slice(1), 1);
        var row = list.body.data.filter(function (s) { return s.study_instance_uid === uid; })[0];
        if (row) return row.id;
        return list.body.current_page < list.body.last_page ? searchFor(keys, page + 1) : searchFor(keys.slice(1), 1);
      });
    }
  }

  var params = new URLSearchParams(window.location.search);
  var wanted = params.get('study');
  var wantedUid = params.get('uid');
  api('GET', '/api/me').then(function (me) {
    state.user = me.body ? me.body.id : null;
    return loadWorklist();
  }).then(function () {
    if (wanted) return selectStudy(wanted);
    if (wantedUid) {
      return studyIdOfUid(wantedUid).then(function (id) {
        if (!id) {
          text($('nothing'), 'That study is not one you can see.');
          return;
        }
        history.replaceState(null, '', '/reports?study=' + encodeURIComponent(id));
        return selectStudy(id);
      });
    }
  }).then(restoreUnsaved);
})();
