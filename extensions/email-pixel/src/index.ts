// Entry point of the web pixel extension. `register` hands the pixel Shopify's sandbox API
// (at runtime it is `shopify.extend('WebPixel::Render', ...)` on the sandbox's global).
import { register } from '@shopify/web-pixels-extension';
import { pixelEndpoint } from './endpoint';
import { startPixel } from './pixel';

register((api) => startPixel(api, pixelEndpoint()));
