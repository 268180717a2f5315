export const PACKAGE = '@svc/tui';
