/**
 * The API contract (see stream-sources.ts for why the types are the source): the settings of
 * sources and sinks (src/pipeline/settings.ts lists them; GET/PATCH .../settings).
 */

export type SettingType = 'string' | 'int' | 'float' | 'bool' | '[]string' | '[]int' | '[]float';

/** One key as GET .../settings answers it (settingsView). */
export interface SettingView {
  key: string;
  type: SettingType;
  description: string;
  value: unknown;
  defaultValue: unknown;
  overwritten: boolean;
  protected: boolean;
  validation?: string;
  /** Sluice's own: the server's floor for a duration key, when it is above the key's minimum. */
  serverMinimum?: string;
}

/** GET .../settings. */
export interface SettingsAnswer {
  settings: SettingView[];
}

/** PATCH .../settings: the keys to change; a null value resets the key to its default. */
export interface SettingsPatch {
  changeDescription?: string;
  settings?: { key: string; value: unknown }[];
}
