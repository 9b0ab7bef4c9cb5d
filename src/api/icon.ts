/**
 * Sluice's icon: the console's favicon (/console/favicon.svg), the API documentation's favicon,
 * its logo, and `/favicon.ico` for the pages that name none (a browser asks for it on every
 * JSON answer it shows).
 */

export const SLUICE_ICON = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1f5f8b"/>'
  + '<path d="M6 10h20M6 16h20M6 22h20" stroke="#fff" stroke-width="3" stroke-linecap="round"/>'
  + '<path d="M22 7v18" stroke="#8fd3ff" stroke-width="3" stroke-linecap="round"/></svg>\n',
);
