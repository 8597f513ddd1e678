/** See dicom-network-env.js. */
export declare const DICOM_NETWORK_ENV: Readonly<{ TCP_NODELAY: string }>;
