export const PACKAGE = '@svc/desktop';
