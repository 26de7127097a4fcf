package tiff

import "fmt"

// TIFF tags Lazaret reads or recognises.
const (
	tagNewSubfileType            = 254
	tagSubfileType               = 255
	tagImageWidth                = 256
	tagImageLength               = 257
	tagBitsPerSample             = 258
	tagCompression               = 259
	tagPhotometricInterpretation = 262
	tagFillOrder                 = 266
	tagStripOffsets              = 273
	tagSamplesPerPixel           = 277
	tagRowsPerStrip              = 278
	tagStripByteCounts           = 279
	tagXResolution               = 282
	tagYResolution               = 283
	tagPlanarConfiguration       = 284
	tagResolutionUnit            = 296
	tagDateTime                  = 306
	tagPredictor                 = 317
	tagColorMap                  = 320
	tagTileWidth                 = 322
	tagTileLength                = 323
	tagTileOffsets               = 324
	tagTileByteCounts            = 325
	tagSubIFDs                   = 330
	tagExtraSamples              = 338
	tagSampleFormat              = 339
	tagICCProfile                = 34675
	tagGeoKeyDirectory           = 34735
	tagTIFFEPStandardID          = 37398
)

var tagNames = map[uint16]string{
	254: "NewSubfileType", 255: "SubfileType", 256: "ImageWidth", 257: "ImageLength", 258: "BitsPerSample",
	259: "Compression", 262: "PhotometricInterpretation", 263: "Threshholding", 264: "CellWidth", 265: "CellLength",
	266: "FillOrder", 269: "DocumentName", 270: "ImageDescription", 271: "Make", 272: "Model", 273: "StripOffsets",
	274: "Orientation", 277: "SamplesPerPixel", 278: "RowsPerStrip", 279: "StripByteCounts", 280: "MinSampleValue",
	281: "MaxSampleValue", 282: "XResolution", 283: "YResolution", 284: "PlanarConfiguration", 285: "PageName",
	286: "XPosition", 287: "YPosition", 288: "FreeOffsets", 289: "FreeByteCounts", 290: "GrayResponseUnit",
	291: "GrayResponseCurve", 292: "T4Options", 293: "T6Options", 296: "ResolutionUnit", 297: "PageNumber",
	301: "TransferFunction", 305: "Software", 306: "DateTime", 315: "Artist", 316: "HostComputer", 317: "Predictor",
	318: "WhitePoint", 319: "PrimaryChromaticities", 320: "ColorMap", 321: "HalftoneHints", 322: "TileWidth",
	323: "TileLength", 324: "TileOffsets", 325: "TileByteCounts", 326: "BadFaxLines", 327: "CleanFaxData",
	328: "ConsecutiveBadFaxLines", 330: "SubIFDs", 332: "InkSet", 333: "InkNames", 334: "NumberOfInks",
	336: "DotRange", 337: "TargetPrinter", 338: "ExtraSamples", 339: "SampleFormat", 340: "SMinSampleValue",
	341: "SMaxSampleValue", 342: "TransferRange", 343: "ClipPath", 344: "XClipPathUnits", 345: "YClipPathUnits",
	346: "Indexed", 347: "JPEGTables", 351: "OPIProxy", 400: "GlobalParametersIFD", 401: "ProfileType",
	402: "FaxProfile", 403: "CodingMethods", 404: "VersionYear", 405: "ModeNumber", 433: "Decode",
	434: "DefaultImageColor", 512: "JPEGProc", 513: "JPEGInterchangeFormat", 514: "JPEGInterchangeFormatLength",
	515: "JPEGRestartInterval", 517: "JPEGLosslessPredictors", 518: "JPEGPointTransforms", 519: "JPEGQTables",
	520: "JPEGDCTables", 521: "JPEGACTables", 529: "YCbCrCoefficients", 530: "YCbCrSubSampling",
	531: "YCbCrPositioning", 532: "ReferenceBlackWhite", 559: "StripRowCounts", 700: "XMP", 32781: "ImageID",
	32932: "WangAnnotation", 32995: "Matteing", 32996: "DataType", 32997: "ImageDepth", 32998: "TileDepth",
	33421: "CFARepeatPatternDim", 33422: "CFAPattern", 33423: "BatteryLevel", 33432: "Copyright",
	33434: "ExposureTime", 33437: "FNumber", 33550: "ModelPixelScale", 33723: "IPTC", 33918: "INGRPacketData",
	33919: "INGRFlags", 33920: "IrasBTransformationMatrix", 33922: "ModelTiepoint", 34264: "ModelTransformation",
	34377: "Photoshop", 34665: "ExifIFD", 34675: "ICCProfile", 34732: "ImageLayer", 34735: "GeoKeyDirectory",
	34736: "GeoDoubleParams", 34737: "GeoAsciiParams", 34853: "GPSIFD", 34908: "FaxRecvParams",
	34909: "FaxSubAddress", 34910: "FaxRecvTime", 37439: "StoNits", 37724: "ImageSourceData",
	40965: "InteroperabilityIFD", 42112: "GDAL_METADATA", 42113: "GDAL_NODATA", 50341: "PrintImageMatching",
	37398: "TIFF/EPStandardID", 50706: "DNGVersion", 50707: "DNGBackwardVersion", 50708: "UniqueCameraModel",
}

// TagName is the tag's name with its number, e.g. "StripOffsets (273)".
func TagName(tag uint16) string {
	if n, ok := tagNames[tag]; ok {
		return fmt.Sprintf("%s (%d)", n, tag)
	}
	return fmt.Sprintf("%d", tag)
}

// knownTag reports whether Lazaret recognises the tag (baseline, extension,
// or a widely registered private tag such as EXIF, ICC, GeoTIFF).
func knownTag(tag uint16) bool {
	_, ok := tagNames[tag]
	return ok
}

// TIFF field types and their sizes in bytes. 16-18 are BigTIFF only.
var typeSize = [...]int64{0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4, 0, 0, 8, 8, 8}

const (
	typeByte      = 1
	typeASCII     = 2
	typeShort     = 3
	typeLong      = 4
	typeRational  = 5
	typeSByte     = 6
	typeUndefined = 7
	typeSShort    = 8
	typeSLong     = 9
	typeSRational = 10
	typeFloat     = 11
	typeDouble    = 12
	typeIFD       = 13
	typeLong8     = 16
	typeSLong8    = 17
	typeIFD8      = 18
)
