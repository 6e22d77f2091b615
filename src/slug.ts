import slugifyText from "slugify";

/** Lowercase words joined by hyphens: "My Source!" -> "my-source". Used for name_slug and orgname. */
export function slugify(text: string): string {
  return slugifyText(text, { lower: true, strict: true, trim: true }).slice(0, 64).replace(/-+$/, "");
}
