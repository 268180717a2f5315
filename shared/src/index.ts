export * from './base64url.js';
export * from './canonical-json.js';
export * from './errors.js';
