/** The version of this build (the API's OpenAPI document and `headwater --version` show it). */
export const VERSION = "0.1.0";
