export const PACKAGE = '@svc/daemon';
