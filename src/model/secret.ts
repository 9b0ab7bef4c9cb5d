import { customAlphabet } from 'nanoid';

/** Source secrets: 48 characters over [0-9a-zA-Z], as the reference generates them. */
export const newSourceSecret = customAlphabet('0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ', 48);
