/**
 * OHIF viewer configuration for the archive: one DICOMweb data source, the proxied /dicom-web/ of
 * the same origin (nginx checks each request with the API before forwarding to the image server,
 * and adds the image server's credentials itself). Two ways in:
 *
 * - The doctors' worklist: sign in at /login (the pacs_access_token cookie); / is OHIF's study
 *   list. The browser sends the cookie with every DICOMweb request: nginx sends the study search
 *   (/dicom-web/studies) to the API, which answers it from its index within the user's scope, and
 *   every other request through the validation to the image server. A "Sign out" button is added
 *   to the page, and a 401 (the session ended) goes back to /login.
 *
 * - One study for another front end:  /viewer?StudyInstanceUIDs=<study instance uid>&token=<viewer token>
 *   OHIF 3 takes the `token` URL parameter, removes it from the address bar and sends it as
 *   `Authorization: Bearer <token>` on every DICOMweb request (metadata, frames, thumbnails); nginx
 *   hands that value to GET /api/viewer/token/validate as X-Viewer-Token. No study list then.
 *
 * Installed into viewer/dist by viewer/install.js.
 */
/** @type {AppTypes.Config} */
(function () {
  var dicomWeb = window.location.origin + '/dicom-web';
  var params = new URLSearchParams(window.location.search);
  // A share's viewer tab reloaded: OHIF took the token out of the address bar, and the share page
  // kept it in this tab (viewer/share/share.js) until it expires, for its study only.
  if (!params.has('token') && window.location.pathname.indexOf('/viewer') === 0) {
    var kept = null;
    try {
      kept = JSON.parse(sessionStorage.getItem('pacs-share-viewer-token'));
    } catch (e) {
      kept = null;
    }
    if (kept && kept.token && kept.until > Date.now() && kept.uid === params.get('StudyInstanceUIDs')) {
      params.set('token', kept.token);
      history.replaceState(history.state, '', window.location.pathname + '?' + params.toString() + window.location.hash);
    }
  }
  // Read before OHIF removes the token from the address bar.
  var withViewerToken = params.has('token');
  if (!withViewerToken) addSignOut();
  // OHIF hands React to its white-labelling callback (and to no other setting of a page's config):
  // kept for the study list's Report column. Returning nothing keeps OHIF's own logo.
  var react = null;
  function keepReact(React) {
    react = React;
    return null;
  }

  window.config = {
    name: 'pacs-archive',
    routerBasename: null,
    extensions: [],
    modes: [],
    whiteLabeling: { createLogoComponentFn: keepReact },
    // The study list's columns: the text filters left to the archive, and a Report column.
    customizationService: withViewerToken ? {} : { 'workList.columns': { $apply: studyListColumns } },
    // A viewer token opens one study: there is no study list to browse then.
    showStudyList: !withViewerToken,
    investigationalUseDialog: { option: 'never' },
    maxNumberOfWebWorkers: 2,
    showWarningMessageForCrossOrigin: false,
    showCPUFallbackMessage: true,
    showLoadingIndicator: true,
    strictZSpacingForVolumeViewport: true,
    maxNumRequests: { interaction: 100, thumbnail: 5, prefetch: 10 },
    showErrorDetails: 'production',
    httpErrorHandler: function (error) {
      // A refusal whose cause is the session itself (expired, signed out elsewhere): sign in again.
      if (withViewerToken || !error || error.status !== 401) return;
      fetch('/api/me', { credentials: 'same-origin' }).then(function (response) {
        if (response.status === 401) window.location.assign('/login');
      });
    },
    defaultDataSourceName: 'pacs',
    dataSources: [
      {
        namespace: '@ohif/extension-default.dataSourcesModule.dicomweb',
        sourceName: 'pacs',
        configuration: {
          friendlyName: 'Archive (viewer proxy)',
          name: 'pacs',
          wadoUriRoot: dicomWeb,
          qidoRoot: dicomWeb,
          wadoRoot: dicomWeb,
          qidoSupportsIncludeField: true,
          supportsReject: false,
          // OHIF's upload (STOW-RS to /dicom-web/studies): nginx sends it to the API, which stores the
          // instances in the signed-in user's unit (a tenant admin must name a unit: not from here).
          dicomUploadEnabled: !withViewerToken,
          imageRendering: 'wadors',
          thumbnailRendering: 'wadors',
          enableStudyLazyLoad: true,
          supportsFuzzyMatching: false,
          // The search boxes find fragments: "silva" is sent as *silva* (the API's QIDO-RS matching).
          supportsWildcard: true,
          staticWado: false,
          singlepart: 'bulkdata,video',
          bulkDataURI: { enabled: true, relativeResolution: 'studies' },
          omitQuotationForMultipartRequest: true,
        },
      },
    ],
  };

  /**
   * OHIF 3.13's study list columns (`StudyList.defaultColumns`), changed in two ways:
   *
   * - The text filters (patient name, MRN, accession, description) keep every row of the archive's
   *   answer. OHIF sends what is typed there to the study search (`PatientName=*joao*`) and then
   *   filters the answer again in the browser: its DataTable (ui-next's DataTable.tsx) runs
   *   TanStack's getFilteredRowModel, and a column without a `filterFn` gets TanStack's
   *   `includesString`, the typed text as a lower-cased substring of the row's text as shown. That
   *   ignores case but not accents nor QIDO's wildcards, so "joao" found SILVA^JOÃO at the archive
   *   (case- and accent-insensitive) and OHIF then hid the row; "cranio" a "crânio" description, and
   *   "wl?a1" an MRN, the same. The archive's answer is the search's result.
   * - Each row's Report link, before OHIF's trailing actions column.
   */
  function studyListColumns(columns) {
    var searchedByTheArchive = ['patient', 'mrn', 'accession', 'description'];
    var result = columns.map(function (column) {
      if (!column || searchedByTheArchive.indexOf(column.id) < 0) return column;
      return Object.assign({}, column, {
        filterFn: function () {
          return true;
        },
      });
    });
    result.splice(-1, 0, reportColumn());
    return result;
  }

  /**
   * A column of the study list (OHIF 3.13's `workList.columns`): each row's link to its study's
   * report page, `/reports?uid=<Study Instance UID>`. A click there opens the page and neither
   * selects the row nor opens the viewer.
   */
  function reportColumn() {
    function stop(event) {
      event.stopPropagation();
    }
    return {
      id: 'pacsReport',
      header: 'Report',
      enableSorting: false,
      enableHiding: false,
      // Nothing to filter: OHIF's filter row gives every column an input (hidden for this one by
      // addSignOut's style), and text typed there must not empty the list.
      filterFn: function () {
        return true;
      },
      cell: function (context) {
        var uid = context.row.original.studyInstanceUid;
        if (!react || !uid) return null;
        return react.createElement(
          'a',
          {
            href: '/reports?uid=' + encodeURIComponent(uid),
            className: 'pacs-report-link text-primary hover:underline',
            title: "Write or read this study's report",
            onClick: stop,
            onDoubleClick: stop,
          },
          'Report'
        );
      },
      meta: { minWidth: 72, headerClassName: 'w-[72px] min-w-[72px]', cellClassName: 'w-[72px] min-w-[72px]' },
    };
  }

  /** A small "Sign out" button over the page: POST /api/logout, then the sign-in page. */
  function addSignOut() {
    function add() {
      var button = document.createElement('button');
      button.type = 'button';
      button.id = 'pacs-sign-out';
      button.textContent = 'Sign out';
      button.title = 'Sign out of the archive';
      button.style.cssText =
        'position:fixed;right:12px;bottom:12px;z-index:10000;padding:6px 12px;border:1px solid #3a3f99;' +
        'border-radius:4px;background:#041c4a;color:#5acce6;font:14px system-ui,sans-serif;cursor:pointer;opacity:0.9';
      button.addEventListener('click', function () {
        button.disabled = true;
        fetch('/api/logout', { method: 'POST', credentials: 'same-origin' }).then(
          function () { window.location.replace('/login'); },
          function () { window.location.replace('/login'); }
        );
      });
      document.body.appendChild(button);
      // OHIF 3.13's configuration has no entry for a link of our own in its viewer: this button
      // opens the viewed study's report there, and from the study list the page of studies to report.
      var reports = document.createElement('a');
      reports.id = 'pacs-reports';
      reports.href = '/reports';
      // In the viewer (OHIF moves there without reloading the page) the link opens that study's report.
      reports.addEventListener('click', function () {
        var uids = new URLSearchParams(window.location.search).get('StudyInstanceUIDs');
        var inViewer = window.location.pathname.indexOf('/viewer') === 0 && uids;
        reports.href = inViewer ? '/reports?uid=' + encodeURIComponent(uids.split(',')[0]) : '/reports';
      });
      reports.textContent = 'Reports';
      reports.title = 'Write and sign reports';
      reports.style.cssText = button.style.cssText;
      reports.style.right = '110px';
      reports.style.textDecoration = 'none';
      document.body.appendChild(reports);
      // The study list's filter input of the Report column (second to last, before OHIF's actions).
      var style = document.createElement('style');
      style.textContent = 'tr[data-filter-row] > td:nth-last-child(2) > * { display: none; }';
      document.head.appendChild(style);
    }
    if (document.body) add();
    else document.addEventListener('DOMContentLoaded', add);
  }
})();
