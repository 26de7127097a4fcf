package api

import (
	"sort"
	"strings"
)

// CodeHelp says what a failure or warning code means, what likely caused
// it and what to do: the catalogue behind docs/codes.md (generated from it
// by TestCodesDoc, so that the two cannot drift) and the help that show
// prints.
type CodeHelp struct {
	Code    string `json:"code"`
	Meaning string `json:"meaning"`
	Cause   string `json:"cause"`
	Action  string `json:"action"`
	Doc     string `json:"doc"` // docs/codes.md#CODE
	// Family: Code is a prefix (limit., manifest., ...) for codes built
	// from a field or a budget name; more specific entries win.
	Family bool `json:"-"`
	// Built: the code is assembled at run time (from a destination, a
	// field, a budget), so it does not appear as one literal in the source.
	Built bool `json:"-"`
}

// Shared causes and actions.
const (
	causeTIFFCorrupt = "The file was damaged in transfer or storage, or written by faulty scanning or conversion software."
	actionNewCopy    = "Fetch a fresh copy from the source (or rescan), check it with `lazaret inspect FILE`, then replay with `--file` (dlq replay ID --file FIXED.tif)."
	causeEDISyntax   = "The sender's EDI software, or a transfer that cut or re-encoded the file, broke the interchange's syntax."
	actionEDIResend  = "Send the CONTRL report (`lazaret contrl FILE.edi`; the worker also writes it to --contrl-outbox) to the sender and ask for a corrected interchange; replay it with `--file`."
	causeEDIContent  = "The message is well formed but its content breaks a rule the receiving side relies on."
	actionEDIFix     = "Ask the sender to correct and resend the message (the reply in --contrl-outbox says which segment and element: an APERAK for a business rule, `lazaret aperak FILE.edi`, a CONTRL for syntax, `lazaret contrl FILE.edi`); replay with `--file`, or discard with a reason."
	causeRegistry    = "The code is not in the registry version in force: the registry is out of date or incomplete (the built-in UN/LOCODE set is a small sample), or the sender used a wrong code."
	actionRegistry   = "Load the full list (`--locode FILE`, `--hs FILE` on workers and on `quarantine reconcile`); workers re-check quarantined items when the files change, or run `lazaret quarantine reconcile`. A code that is truly wrong goes back to the sender."
	actionRetryAuto  = "Nothing at first: Lazaret retries with backoff. If it stays, fix the cause and `lazaret dlq redrive --code CODE`."
	actionManifest   = "Correct the manifest and submit it again; `lazaret submit --dry-run MANIFEST` lists every problem at once."
)

func tiffCorrupt(code, meaning string) CodeHelp {
	return CodeHelp{Code: code, Meaning: meaning, Cause: causeTIFFCorrupt, Action: actionNewCopy}
}

func tiffWarning(code, meaning, action string) CodeHelp {
	return CodeHelp{Code: code, Meaning: meaning + " (a warning: the item is not refused for it).",
		Cause: "The writing software took a liberty the TIFF 6.0 specification does not allow, or an extension Lazaret does not check.", Action: action}
}

func ediSyntax(code, meaning string) CodeHelp {
	return CodeHelp{Code: code, Meaning: meaning, Cause: causeEDISyntax, Action: actionEDIResend}
}

func ediContent(code, meaning string) CodeHelp {
	return CodeHelp{Code: code, Meaning: meaning, Cause: causeEDIContent, Action: actionEDIFix}
}

// codeCatalogue is every code Lazaret records or warns with.
var codeCatalogue = []CodeHelp{
	// TIFF structure: corrupt files, dead-lettered.
	tiffCorrupt("tiff.truncated", "The file ends before a structure it declares (header, IFD, tag value)."),
	tiffCorrupt("tiff.not-tiff", "The file does not start with a TIFF byte-order mark and magic number (II*\\0 or MM\\0*)."),
	tiffCorrupt("tiff.bad-header", "The TIFF header is malformed (a BigTIFF header with a wrong offset size)."),
	tiffCorrupt("tiff.no-ifd", "The header points to no image file directory: the file holds no page."),
	tiffCorrupt("tiff.ifd-loop", "A next-IFD pointer goes back to an earlier page: following it would loop forever."),
	tiffCorrupt("tiff.ifd-depth", "Child IFDs (SubIFDs, EXIF, GPS, Interoperability) nest more than four levels deep."),
	tiffCorrupt("tiff.bad-ifd-pointer", "A SubIFD, EXIF, GPS or Interoperability pointer is 0: it names no directory."),
	tiffCorrupt("tiff.bad-ycbcr-subsampling", "YCbCrSubSampling is not 1, 2 or 4 in each direction, or subsamples more vertically than horizontally (TIFF 6.0 section 21)."),
	tiffCorrupt("tiff.bad-ycbcr-coefficients", "A YCbCrCoefficients value is zero, negative or not finite: the colour conversion would divide by zero."),
	tiffCorrupt("tiff.bad-reference-black-white", "ReferenceBlackWhite is not finite, or gives white equal to black for a component."),
	tiffCorrupt("tiff.bad-jpeg-tables", "JPEGTables is not an abbreviated JPEG table stream (SOI, tables, EOI)."),
	tiffCorrupt("tiff.jpeg-components", "A JPEG strip or tile has another number of components than the page's samples."),
	tiffCorrupt("tiff.jpeg-size", "A JPEG strip or tile frame is larger than the strip or tile it fills (libtiff refuses it too)."),
	tiffCorrupt("tiff.webp-size", "A WebP strip or tile decodes to another size than the strip or tile it fills."),
	tiffCorrupt("tiff.ifd-outside-file", "An IFD offset points beyond the end of the file."),
	tiffCorrupt("tiff.empty-ifd", "An image file directory declares no entries."),
	tiffCorrupt("tiff.bad-type", "A tag has a field type the specification does not define, or not the type the tag requires."),
	tiffCorrupt("tiff.bad-count", "A tag has a value count that overflows or that the tag does not allow."),
	tiffCorrupt("tiff.value-outside-file", "A tag's values lie beyond the end of the file."),
	tiffCorrupt("tiff.bad-value", "A tag holds an impossible value (a zero denominator, a zero RowsPerStrip, an unknown PlanarConfiguration, a size beyond any decoder)."),
	tiffCorrupt("tiff.missing-tag", "A tag every baseline reader needs is missing (ImageWidth, ImageLength, StripOffsets or StripByteCounts, TileWidth...)."),
	tiffCorrupt("tiff.zero-size", "The page is 0 pixels wide or high."),
	tiffCorrupt("tiff.bad-datetime", "The DateTime tag is not 20 bytes, or one of its fields is out of range."),
	tiffCorrupt("tiff.strips-and-tiles", "A page defines both strips and tiles."),
	tiffCorrupt("tiff.block-count-mismatch", "A page has a different number of strip (or tile) offsets and byte counts."),
	tiffCorrupt("tiff.too-few-blocks", "A page has fewer strips or tiles than its size needs."),
	tiffCorrupt("tiff.empty-block", "A strip or tile has a byte count of 0."),
	tiffCorrupt("tiff.block-outside-file", "A strip or tile lies beyond the end of the file."),
	tiffCorrupt("tiff.short-block", "A strip or tile is shorter than an uncompressed page needs."),
	tiffCorrupt("tiff.short-data", "A strip or tile decompresses to fewer bytes than its rows need."),
	tiffCorrupt("tiff.truncated-data", "Compressed image data ends before the rows it should hold."),
	tiffCorrupt("tiff.lzw-no-eoi", "An LZW strip or tile has no end-of-information code."),
	tiffCorrupt("tiff.undecodable", "The image data does not decode with its declared compression."),
	{Code: "tiff.decoder-panic", Meaning: "The image decoder failed unexpectedly on this page (caught; nothing else was affected).",
		Cause:  "Image data the decoder cannot handle: usually corruption, possibly a decoder defect.",
		Action: "Check the file with another reader (tiffinfo -D FILE); if it reads there, report it with the file. Otherwise " + actionNewCopy},
	{Code: "tiff.too-many-pages", Meaning: "The file has more IFDs (pages) than the walk allows.", Cause: "A corrupt IFD chain, or a very long multi-page file.",
		Action: "If the page count is genuine, split the file; otherwise " + actionNewCopy},
	{Code: "tiff.too-many-entries", Meaning: "An IFD declares more entries than the walk allows.", Cause: causeTIFFCorrupt, Action: actionNewCopy},
	{Code: "tiff.too-many-blocks", Meaning: "A page declares more strips or tiles than the walk allows.", Cause: "Corruption, or a writer that used one-row strips on a huge page.",
		Action: "Rewrite the file with larger strips or tiles (tiffcp -r 64), or " + actionNewCopy},
	{Code: "tiff.old-lzw", Meaning: "The page uses the pre-1992 \"old-style\" LZW that TIFF 6.0 withdrew.", Cause: "Very old writing software.",
		Action: "Convert the file to current LZW or Deflate (tiffcp -c lzw) and replay with `--file`."},
	tiffWarning("tiff.ifd-unaligned", "An IFD starts on an odd byte", "None needed; rewrite with tiffcp if a strict reader complains."),
	tiffWarning("tiff.tags-unsorted", "The IFD's tags are not in ascending order", "None needed; rewrite with tiffcp for strict readers."),
	tiffWarning("tiff.duplicate-tag", "A tag appears twice in one IFD; the first is used", "Check the first value is the right one (tiffinfo); rewrite with tiffcp."),
	tiffWarning("tiff.bps-count", "BitsPerSample has a different number of values than samples per pixel", "None needed if the image looks right."),
	tiffWarning("tiff.no-compression-tag", "The Compression tag is absent; none (1) is assumed", "None needed; the data was checked as uncompressed."),
	tiffWarning("tiff.no-photometric", "PhotometricInterpretation is absent", "Add it (tiffset) if viewers show wrong colours."),
	tiffWarning("tiff.block-overrun", "A strip or tile's compressed data decodes a little past the rows it holds (an older encoder's quirk); it is read to its rows and the rest ignored, as libtiff does",
		"None needed; tiffcp rewrites it exactly. Only far past its rows is a block refused (limit.inflate)."),
	tiffWarning("tiff.bad-fill-order", "FillOrder is neither 1 nor 2; 1 (most significant bit first) is assumed", "None needed if the pixels look right; fix the writer's tag otherwise."),
	tiffWarning("tiff.private-ifd-next", "An EXIF, GPS or Interoperability directory has a next-IFD pointer; it is not followed", "None needed."),
	tiffWarning("tiff.ycbcr-coefficients-sum", "YCbCrCoefficients do not sum to 1", "None needed if the colours look right."),
	tiffWarning("tiff.datetime-format", "DateTime is not in YYYY:MM:DD HH:MM:SS form", "None needed; fix the scanner's clock format if dates matter."),
	tiffWarning("tiff.extra-blocks", "A page has more strips or tiles than its size needs; the rest are ignored", "None needed."),
	tiffWarning("tiff.unknown-tags", "The file holds private or unregistered tags", "None needed under --private-tags tolerate; under reject see policy.private-tag."),
	tiffWarning("tiff.bad-icc", "The embedded ICC profile does not parse", "Re-embed the profile (the scanner's or sRGB) if colour management matters."),
	tiffWarning("tiff.not-decoded", "A page's encoding is one the decoder does not read; its structure was checked, its pixels were not", "None under --undecodable warn; convert the file if pixels must be proven."),

	// Policy and budgets: valid files Lazaret is told not to take.
	{Code: "policy.private-tag", Meaning: "The file holds private tags and the policy rejects them (--private-tags reject).",
		Cause:  "Scanner or editing software that stores its own metadata in the file.",
		Action: "Strip the tags (tiffcp copies only known ones) and replay with `--file`, or run workers with --private-tags tolerate."},
	{Code: "policy.undecodable", Meaning: "A page uses an encoding the decoder cannot read and the policy rejects such pages (--undecodable reject).",
		Cause:  "JPEG-in-TIFF, JBIG or another encoding outside the decoder's set.",
		Action: "Convert the file to an encoding the decoder reads (uncompressed, LZW, Deflate, PackBits) or run workers with --undecodable warn."},
	{Code: "policy.sample-format", Meaning: "A page holds samples in a format the collection refuses in its masters (--refuse-sample-format), complex floating point say.",
		Cause:  "Scientific, radar or intermediate data submitted as a master; the file itself is sound.",
		Action: "Convert it to a format the collection takes, or run workers without refusing that format, and replay."},
	{Code: "limit.", Family: true, Meaning: "Checking the item would need more than a budget allows, so it was refused before reading it all.",
		Cause: "A very large (or decompression-bomb) file, or a budget set too low.", Action: "If the file is genuine, raise the budget on the workers and replay; otherwise discard it."},
	{Code: "limit.pixels", Built: true, Meaning: "A page has more pixels (width × height) than --pixel-budget allows.",
		Cause: "A very large scan, or dimensions forged to exhaust memory.", Action: "If the size is genuine, raise --pixel-budget on the workers and replay; otherwise discard."},
	{Code: "limit.memory", Built: true, Meaning: "Decoding a page would hold more memory than --memory-budget allows.",
		Cause: "Large strips or tiles, or a forged layout.", Action: "Raise --memory-budget on the workers and replay, or rewrite the file with smaller strips (tiffcp -r 16)."},
	{Code: "limit.inflate", Built: true, Meaning: "A strip or tile decompresses to far more bytes than its rows hold: past an eighth more (or 4 KiB), which no honest encoder's overrun reaches.",
		Cause: "A decompression bomb, or corrupt compressed data.", Action: actionNewCopy},
	{Code: "limit.file-pixels", Built: true, Meaning: "The pages of the file decoded so far hold more pixels together than the file's budget: four --pixel-budget, or 1,024 pixels a byte of the file, whichever is more. Pages that share the same data and read it the same way are decoded once and cost nothing more.",
		Cause:  "Pages pointing at the same strip with different sizes (a page-sharing bomb), or very many blank bilevel pages.",
		Action: "If the file is genuine, rewrite it so that every page has its own data (tiffcp) and replay with `--file`; otherwise discard it."},
	{Code: "limit.strip-array", Built: true, Meaning: "The strip or tile offset arrays of the pages exceed --memory-budget.",
		Cause: "Millions of tiny strips, or a forged count.", Action: "Rewrite the file with larger strips (tiffcp -r 64) and replay with `--file`."},

	// Fixity and format.
	{Code: "fixity.", Family: true, Meaning: "The file's digest or size differs from the manifest's.", Cause: "The file changed or was damaged after the manifest was written, or the manifest is wrong.",
		Action: "Compare with the source copy; replay with `--file` (a corrected file) or resubmit a corrected manifest."},
	{Code: "fixity.sha256-mismatch", Built: true, Meaning: "The file's SHA-256 differs from the manifest's sha256.",
		Cause:  "Damage in transfer or storage, a different version of the file, or a wrong digest in the manifest.",
		Action: "Compute the digest of the source copy (sha256sum); if the manifest is wrong, correct it; otherwise replay with a good copy (`--file`)."},
	{Code: "fixity.size-mismatch", Built: true, Meaning: "The file's size differs from the manifest's size.",
		Cause: "A truncated copy, or a wrong size in the manifest.", Action: "Copy the file again, or correct the manifest's size."},
	{Code: "format.conflict-", Family: true, Meaning: "What the file is (identified from its content) is not what its name or the manifest says.",
		Cause: "A renamed file, or a manifest entry pointing at the wrong file.", Action: "Check the path and the file; correct the manifest's format or path, or replay with the right file."},
	{Code: "format.conflict-extension", Built: true, Meaning: "The file's content is not what its extension says (e.g. a JPEG named .tif).",
		Cause: "A renamed or mislabelled file.", Action: "Find the real master, or convert the file; replay with `--file`."},
	{Code: "format.conflict-manifest", Built: true, Meaning: "The file's content is not the format the manifest declares.",
		Cause: "A wrong format in the manifest, or a wrong path.", Action: "Correct the manifest (format or path) and resubmit, or replay with the right file."},
	{Code: "format.no-extension", Meaning: "The file name has no extension (a warning).", Cause: "A file saved without one.", Action: "None needed; add .tif for the people who open it later."},

	// Manifest rules, per item.
	{Code: "manifest.", Family: true, Meaning: "A manifest field breaks a rule (the code is manifest.FIELD.RULE).", Cause: "A mistake in the manifest.", Action: actionManifest},
	{Code: "manifest.color_profile.required", Built: true, Meaning: "The item has no color_profile.", Cause: "The manifest's export left the field empty.",
		Action: "Add the colour profile the scan was made with (e.g. \"sRGB IEC61966-2.1\") and resubmit; the item waits in quarantine meanwhile."},
	{Code: "manifest.color_profile.matches_file", Built: true, Meaning: "color_profile differs from the ICC profile embedded in the file.",
		Cause: "A manifest filled in from a template, or a file re-saved with another profile.", Action: "Correct color_profile (or re-embed the right profile) and resubmit or replay."},
	{Code: "manifest.color_profile.embedded", Built: true, Meaning: "The policy requires an embedded ICC profile (--require-icc) and the file has none.",
		Cause: "Scanning software set not to embed profiles.", Action: "Embed the profile (the scanner's, or sRGB) and replay with `--file`, or run workers without --require-icc."},
	{Code: "manifest.resolution_dpi.required", Built: true, Meaning: "The item has no resolution_dpi.", Cause: "The field was left empty.", Action: actionManifest},
	{Code: "manifest.resolution_dpi.numeric", Meaning: "resolution_dpi is not a number.", Cause: "A unit or a typo in the field (\"400dpi\").", Action: actionManifest},
	{Code: "manifest.resolution_dpi.min", Built: true, Meaning: "resolution_dpi is below the policy minimum (--min-dpi).", Cause: "A scan below the required resolution, or a typo.",
		Action: "Rescan at the required resolution, or correct the manifest if the number is wrong."},
	{Code: "manifest.resolution_dpi.matches_file", Built: true,
		Meaning: "resolution_dpi cannot be confirmed from the file: the file says another resolution, or records none (no XResolution, or ResolutionUnit 1, \"no absolute unit\").",
		Cause:   "Scanners and converters often write XResolution 72 or no unit at all; or the manifest's number is wrong.",
		Action:  "Check the scanner's settings. If the file is right and the unit is missing, set it (tiffset -s 296 2 FILE; tiffset -s 282 400 FILE) and replay with `--file`; if the manifest is wrong, correct resolution_dpi."},

	// Files and I/O.
	{Code: "io.not-found", Meaning: "The item's file is not there (yet).", Cause: "A storage mount not up, a copy still in progress, or a wrong path.",
		Action: actionRetryAuto + " If the path is wrong, resubmit a corrected manifest."},
	{Code: "io.permission", Meaning: "The worker may not read the item's file.", Cause: "File or folder permissions (the worker runs as its own user).",
		Action: "Give the worker's user read access to the ingest root; retries pick it up, or `lazaret dlq redrive --code io.permission`."},
	{Code: "io.descriptors", Meaning: "The worker ran out of file descriptors (EMFILE, ENFILE) while it opened or read the item: a resource of the worker's, not a fault of the file.",
		Cause:  "Too many open connections or files in the worker's process or on the machine (a flood of connections to serve, a descriptor limit set too low).",
		Action: "Nothing at first: Lazaret retries with backoff. If it stays, raise the descriptor limit (LimitNOFILE) or lower serve's --max-connections, then `lazaret dlq redrive --code io.descriptors`."},
	{Code: "io.unavailable", Meaning: "The storage did not answer (connection refused or reset, I/O error, stale handle, timeout).", Cause: "A network file system or disk problem.",
		Action: actionRetryAuto},
	{Code: "io.file-changed", Meaning: "The file is not the one submitted, or changed while it was read: another file (device and inode) now stands at the path, dead-lettered with nothing read; or its size changed during the read, retried.",
		Cause:  "A copy still being written into the ingest root; or the file was replaced after submit (copied again, restored, or swapped by someone).",
		Action: "Copy into the ingest root atomically (copy to a temporary name, then rename); a growing file is retried automatically. A replaced file: check it is the right one, then `lazaret dlq replay ID --file PATH` takes it as it is now."},
	{Code: "io.hardlink", Meaning: "The file has more than one hard link; nothing was read.",
		Cause:  "A hard link can bring a file from outside the ingest root into it (openat2 sees names, not inodes); or a store that deduplicates with hard links.",
		Action: "Copy the file in instead of linking it and replay; for a store that deduplicates with hard links, start submitters and workers with `--allow-hardlinks DIR` for that root."},
	{Code: "io.outside-root", Meaning: "The path is not beneath an ingest root; nothing was read.", Cause: "A manifest or corrected file elsewhere, or no --ingest-root configured.",
		Action: "Move the file beneath an ingest root, or configure --ingest-root; replay."},
	{Code: "io.symlink", Meaning: "The path goes through a symbolic link; nothing was read.", Cause: "A link inside the ingest root (links could lead out of it).",
		Action: "Replace the link with the file itself and replay."},
	{Code: "file.not-regular", Meaning: "The path is not a regular file (a folder, a FIFO, a device); nothing was read.", Cause: "A wrong path in the manifest.",
		Action: "Correct the path and resubmit."},

	// UN/EDIFACT syntax (from edifact.SyntaxError): dead-lettered with a CONTRL report.
	{Code: "edifact.", Family: true, Meaning: "The interchange or one of its messages fails a UN/EDIFACT syntax or message rule.", Cause: causeEDISyntax, Action: actionEDIResend},
	ediSyntax("edifact.syntax", "The interchange breaks the UN/EDIFACT syntax rules (ISO 9735)."),
	ediSyntax("edifact.syntax-version", "The syntax identifier or version in UNB is not one Lazaret reads."),
	ediSyntax("edifact.unterminated", "A segment has no terminator before the end of the file."),
	ediSyntax("edifact.segment-too-long", "A segment is longer than any valid segment can be."),
	ediSyntax("edifact.too-many-elements", "A segment has more data elements than allowed."),
	ediSyntax("edifact.bad-tag", "A segment tag is not three upper-case letters or digits."),
	ediSyntax("edifact.bad-una", "The UNA service string advice is malformed."),
	ediSyntax("edifact.dangling-release", "The file ends with a release character that releases nothing."),
	ediSyntax("edifact.unb-missing", "The interchange does not start with UNB (after an optional UNA)."),
	ediSyntax("edifact.unz-missing", "The interchange has no UNZ trailer."),
	ediSyntax("edifact.unt-missing", "A message has no UNT trailer."),
	ediSyntax("edifact.une-missing", "A functional group has no UNE trailer."),
	ediSyntax("edifact.element-missing", "A mandatory data element of a service segment is empty."),
	ediSyntax("edifact.outside-message", "A segment stands outside any message (between UNT and the next UNH)."),
	ediSyntax("edifact.data-after-unz", "There is data after the UNZ trailer that does not begin another interchange (UNA or UNB)."),
	ediSyntax("edifact.reference-mismatch", "A trailer's control reference differs from its header's (UNZ/UNB, UNT/UNH, UNE/UNG)."),
	ediSyntax("edifact.count-mismatch", "A trailer's count (UNT segments, UNZ messages) differs from what the interchange holds."),
	ediSyntax("edifact.groups-mixed", "The interchange mixes functional groups and messages outside groups."),
	ediSyntax("edifact.empty", "The interchange is empty."),
	{Code: "edifact.duplicate-message", Meaning: "Two messages of the interchange share one message reference (UNH 0062); the interchange is refused whole (CONTRL 0085 code 26).",
		Cause: "A sender that numbers every message 1, or copies messages without renumbering them.", Action: "Ask the sender to give each message its own reference and resend."},
	{Code: "edifact.too-many-references", Meaning: "More than 1,048,576 message references of the interchange do not count up one by one (1, 2, 3 or 0001, 0002), the most Lazaret holds to find a repeated one; the interchange is refused whole.",
		Cause: "A huge interchange whose message references are random or out of order.", Action: "Ask the sender to number the messages in sequence, or to split the interchange."},
	{Code: "edifact.too-many-segments", Meaning: "A message has more segments than the reader allows.", Cause: "A huge or runaway message.", Action: "Ask the sender to split it."},
	ediSyntax("edifact.object-length", "A binary object (ISO 9735-8, UNO .. UNP) declares a length (0810) that is not a count, runs past the end of the file, or does not end where its UNP begins."),
	{Code: "edifact.too-many-interchanges", Meaning: "A file holds more interchanges, one after the other, than the reader allows (16384).",
		Cause: "A runaway concatenation of interchanges.", Action: "Ask the sender to send them in several files."},
	{Code: "edifact.message-too-large", Meaning: "A message is larger than the reader allows.", Cause: "A huge or runaway message.", Action: "Ask the sender to split it."},
	{Code: "edifact.unsupported", Meaning: "The interchange is valid but uses something Lazaret does not support (a message type, a non-UN agency).",
		Cause: "A message outside Lazaret's set.", Action: "Route it elsewhere, or discard with a reason."},
	{Code: "edifact.message.gone", Meaning: "The message this item stands for is no longer in the interchange.", Cause: "The interchange was replaced by one without this message reference.",
		Action: "Discard the item with a reason, or replay with the interchange that holds the message."},

	// UN/EDIFACT message rules.
	ediContent("edifact.bgm.missing", "The message has no BGM (beginning of message) segment."),
	ediContent("edifact.nad.qualifier-missing", "A NAD segment has no party function qualifier (3035)."),
	ediContent("edifact.party.missing", "A party the message type requires (e.g. the consignee) is not named."),
	ediContent("edifact.dtm.invalid", "A DTM date or time does not match its format qualifier."),
	ediContent("edifact.locode.missing", "A LOC segment declares a UN/LOCODE but carries none."),
	ediContent("edifact.locode.malformed", "A location code is not a UN/LOCODE (2 letters of country, 3 of A-Z or 2-9)."),
	ediContent("edifact.hs.malformed", "An HS commodity code is not 2 to 10 digits."),
	ediContent("edifact.container.check-digit", "A container number's ISO 6346 check digit is wrong."),
	ediContent("edifact.charset", "The message has characters outside its declared syntax identifier (UNOA, UNOB...)."),
	{Code: "edifact.locode.unknown", Meaning: "A UN/LOCODE is well formed but not in the registry in force.", Cause: causeRegistry, Action: actionRegistry},
	{Code: "edifact.hs.unknown", Meaning: "An HS code is well formed but not in the registry in force.", Cause: causeRegistry, Action: actionRegistry},
	{Code: "edifact.vgm.missing", Meaning: "A container has no verified gross mass (MEA+AAE+VGM), which SOLAS requires before loading.",
		Cause: "The shipper has not declared it yet.", Action: "Ask the shipper for the VGM declaration; the container must not be loaded without it."},
	{Code: "edifact.vgm.invalid", Meaning: "The verified gross mass is not a usable number or unit.", Cause: causeEDIContent, Action: actionEDIFix},
	{Code: "edifact.vgm.implausible", Meaning: "The verified gross mass is outside what the container can weigh (--vgm-floor, --vgm-max or its size type).",
		Cause: "A unit error (tonnes for kg) or a typing error.", Action: "Ask the shipper to confirm the VGM; correct and resend."},
	{Code: "registry.unavailable", Meaning: "The registry files (UN/LOCODE, HS) could not be loaded, so interchanges cannot be checked.",
		Cause: "A missing or unreadable --locode or --hs file.", Action: "Fix the path or the file; workers keep the previous version until a load succeeds."},

	// Tasks, routing and the ledger.
	{Code: "task.undecodable", Meaning: "The task's payload is not an envelope Lazaret can read.", Cause: "A task enqueued by something else, or by an incompatible version.",
		Action: "Discard it with a reason; resubmit the item from its manifest."},
	{Code: "routing.", Family: true, Meaning: "The item could not be routed: the ledger or the broker failed at the moment of the decision.",
		Cause: "Redis or the ledger down, or the worker killed mid-decision.", Action: actionRetryAuto},
	{Code: "routing.exhausted", Meaning: "Deliveries ended without a recorded decision more often than --routing-budget allows; the item was dead-lettered.",
		Cause: "Repeated ledger or broker outages, or a worker killed again and again on this item (memory?).", Action: "Fix the outage, then `lazaret dlq redrive --code routing.exhausted`."},
	{Code: "ledger.busy", Meaning: "The ledger was locked by another writer for too long.", Cause: "Heavy concurrent writing to an SQLite ledger.",
		Action: actionRetryAuto + " For many workers use a PostgreSQL ledger."},
	{Code: "broker.archived-unrecorded", Meaning: "asynq archived a task with no ledger event (a lease expired: the worker died); reconciliation recorded it.",
		Cause: "A worker crashed or was killed while processing.", Action: "Replay it (`lazaret dlq replay ID`) after checking why the worker died."},
	{Code: "timeout", Meaning: "Checking the item took longer than the task timeout.", Cause: "A very large file, slow storage, or a stuck read.", Action: actionRetryAuto},
	{Code: "canceled", Meaning: "The work was cancelled (a shutdown).", Cause: "A worker stopping.", Action: "Nothing: the task is handed back and retried."},
	{Code: "panic", Meaning: "Lazaret failed unexpectedly on this item (caught; parked for a person).", Cause: "A defect in Lazaret.",
		Action: "Report it with the item (lazaret hold show ID --json); the item waits on audit-hold."},
	{Code: "unclassified", Meaning: "An error Lazaret does not recognise; parked rather than retried forever.", Cause: "A failure mode the classifier does not know yet.",
		Action: "Read the message (`show ID`); fix the cause and replay, and report it so it gets a code."},
}

// docPath is where the catalogue is published.
const docPath = "docs/codes.md"

// LookupCode returns the help for code: its own entry, or its family's.
func LookupCode(code string) (CodeHelp, bool) {
	var best CodeHelp
	found := false
	for _, h := range codeCatalogue {
		switch {
		case !h.Family && h.Code == code:
			h.Doc = docPath + "#" + anchor(h.Code)
			return h, true
		case h.Family && strings.HasPrefix(code, h.Code) && len(h.Code) > len(best.Code):
			best, found = h, true
		}
	}
	if found {
		best.Doc, best.Code = docPath+"#"+anchor(best.Code), code
	}
	return best, found
}

// Codes lists the catalogue, sorted by code.
func Codes() []CodeHelp {
	out := make([]CodeHelp, 0, len(codeCatalogue))
	for _, h := range codeCatalogue {
		h.Doc = docPath + "#" + anchor(h.Code)
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}

// anchor is the HTML id of a code's section in docs/codes.md:
// tiff.ifd-loop is tiff-ifd-loop, the family limit. is limit-family.
func anchor(code string) string {
	a := strings.NewReplacer(".", "-", "_", "-").Replace(code)
	if t := strings.TrimRight(a, "-"); t != a {
		return t + "-family"
	}
	return a
}
