/*
 * How the archive's own pages (the report page, the share page) show DICOM values to people, one
 * rule for both; the report PDF prints names alike (personName in src/reports/pdf/render-report.ts).
 * Served from /login/ with the sign-in page's look (login.css), which the share page loads too.
 */
(function () {
  'use strict';
  window.pacsShown = {
    /* A DICOM person name (PN) as people read it: "SOUZA^ANA^MARIA" is "SOUZA, ANA MARIA". */
    name: function (pn) {
      var c = String(pn || '').split('=')[0].split('^');
      var rest = [c[3], c[1], c[2], c[4]]
        .map(function (part) {
          return (part || '').trim();
        })
        .filter(Boolean)
        .join(' ');
      return [(c[0] || '').trim(), rest].filter(Boolean).join(', ') || String(pn || '');
    },
    /* A date (YYYY-MM-DD...) as dd/mm/yyyy. */
    date: function (iso) {
      return iso ? iso.slice(8, 10) + '/' + iso.slice(5, 7) + '/' + iso.slice(0, 4) : '';
    },
  };
})();
