/**
 * The slice of Electron's main-process API the shell uses. Declared here (structurally,
 * as Electron's own types have it) so the shell compiles and is unit-tested on machines
 * where the Electron binary cannot be installed; at run time main.ts hands in the real module.
 */
export interface WebPreferences {
  sandbox: boolean;
  contextIsolation: boolean;
  nodeIntegration: boolean;
  nodeIntegrationInWorker: boolean;
  webSecurity: boolean;
  allowRunningInsecureContent: boolean;
  webviewTag: boolean;
  spellcheck: boolean;
  safeDialogs: boolean;
}

export interface WindowOptions {
  width: number;
  height: number;
  minWidth: number;
  minHeight: number;
  title: string;
  show: boolean;
  autoHideMenuBar: boolean;
  backgroundColor: string;
  icon?: string;
  webPreferences: WebPreferences;
}

export interface WebContentsLike {
  on(event: 'will-navigate' | 'will-redirect', fn: (event: { preventDefault(): void }, url: string) => void): void;
  setWindowOpenHandler(fn: (details: { url: string }) => { action: 'deny' | 'allow' }): void;
  session: {
    setPermissionRequestHandler(
      fn: (wc: unknown, permission: string, callback: (granted: boolean) => void) => void,
    ): void;
  };
}

export interface BrowserWindowLike {
  webContents: WebContentsLike;
  loadURL(url: string): Promise<void>;
  once(event: 'ready-to-show', fn: () => void): void;
  on(event: 'closed' | 'focus', fn: () => void): void;
  show(): void;
  focus(): void;
  restore(): void;
  isMinimized(): boolean;
  isFocused(): boolean;
  isDestroyed(): boolean;
}

export interface TrayLike {
  setToolTip(text: string): void;
  setTitle(text: string): void;
  setContextMenu(menu: unknown): void;
  on(event: 'click', fn: () => void): void;
  destroy(): void;
}

export interface NotificationLike {
  on(event: 'click', fn: () => void): void;
  show(): void;
}

export interface AppLike {
  requestSingleInstanceLock(): boolean;
  on(event: 'second-instance' | 'window-all-closed' | 'before-quit' | 'activate', fn: () => void): void;
  whenReady(): Promise<void>;
  quit(): void;
  setBadgeCount?(count: number): boolean;
}

export interface ElectronLike {
  app: AppLike;
  BrowserWindow: new (options: WindowOptions) => BrowserWindowLike;
  Tray: new (iconPath: string) => TrayLike;
  Notification: (new (options: {
    title: string;
    body: string;
    silent?: boolean;
  }) => NotificationLike) & {
    isSupported(): boolean;
  };
  Menu: { buildFromTemplate(items: Array<{ label: string; click?: () => void; type?: string }>): unknown };
  shell: { openExternal(url: string): Promise<void> };
}
