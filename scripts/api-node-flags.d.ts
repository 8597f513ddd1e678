/** See api-node-flags.js. */
export declare const API_NODE_FLAGS: string[];
