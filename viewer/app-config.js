/**
 * OHIF viewer configuration for the archive: one DICOMweb data source, the proxied /dicom-web/ of
 * the same origin (nginx checks the viewer token with the API before forwarding to the image
 * server, and adds the image server's credentials itself).
 *
 * Open a study with:  /viewer?StudyInstanceUIDs=<study instance uid>&token=<viewer token>
 * OHIF 3 takes the `token` URL parameter, removes it from the address bar and sends it as
 * `Authorization: Bearer <token>` on every DICOMweb request (metadata, frames, thumbnails); nginx
 * hands that value to GET /api/viewer/token/validate as X-Viewer-Token.
 *
 * Installed into viewer/dist by viewer/install.js.
 */
/** @type {AppTypes.Config} */
(function () {
  var dicomWeb = window.location.origin + '/dicom-web';

  window.config = {
    name: 'pacs-archive',
    routerBasename: null,
    extensions: [],
    modes: [],
    customizationService: {},
    // A viewer token opens one study: there is no study list to browse.
    showStudyList: false,
    investigationalUseDialog: { option: 'never' },
    maxNumberOfWebWorkers: 2,
    showWarningMessageForCrossOrigin: false,
    showCPUFallbackMessage: true,
    showLoadingIndicator: true,
    strictZSpacingForVolumeViewport: true,
    maxNumRequests: { interaction: 100, thumbnail: 5, prefetch: 10 },
    showErrorDetails: 'production',
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
          dicomUploadEnabled: false,
          imageRendering: 'wadors',
          thumbnailRendering: 'wadors',
          enableStudyLazyLoad: true,
          supportsFuzzyMatching: false,
          supportsWildcard: false,
          staticWado: false,
          singlepart: 'bulkdata,video',
          bulkDataURI: { enabled: true, relativeResolution: 'studies' },
          omitQuotationForMultipartRequest: true,
        },
      },
    ],
  };
})();
