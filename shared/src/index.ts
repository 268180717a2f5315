export * from './base64url.js';
export * from './canonical-json.js';
export * from './deployment-document.js';
export * from './enrollment-code.js';
export * from './envelope/index.js';
export * from './errors.js';
export * from './schemas/index.js';
export * from './signed-statements.js';
