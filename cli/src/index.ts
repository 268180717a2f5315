export const PACKAGE = '@svc/cli';
